import { randomBytes } from 'node:crypto';
import { fetchFrom } from '@platform/testing';

/** A browser-like visit: no redirects followed, cookies passed by hand; `from` a local address (fetchFrom). */
export async function visit(url: string, init: { method?: string; form?: Record<string, string>; cookie?: string; from?: string } = {}) {
  const send = init.from ? fetchFrom(init.from) : fetch;
  const response = await send(url, {
    method: init.method ?? (init.form ? 'POST' : 'GET'),
    redirect: 'manual',
    headers: {
      ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      ...(init.cookie ? { cookie: init.cookie } : {}),
    },
    body: init.form ? new URLSearchParams(init.form).toString() : undefined,
  });
  const setCookie = response.headers.get('set-cookie');
  return { status: response.status, location: response.headers.get('location'), html: await response.text(), headers: response.headers, cookie: setCookie ? setCookie.split(';')[0] : undefined };
}

/** The hidden inputs of the page's form. */
export function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1]] = match[2].replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
  }
  return fields;
}

/** Signs a developer up through the token service's sign-up page, as a person would. */
export async function signUpDeveloper(issuer: string, options: { email?: string; password?: string; from?: string } = {}) {
  const email = options.email ?? `dev-${randomBytes(5).toString('hex')}@example.test`;
  const password = options.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const { from } = options;
  const page = await visit(`${issuer}/signup`, { from });
  if (page.status !== 200 || !page.cookie) throw new Error(`sign-up page: ${page.status}`);
  const done = await visit(`${issuer}/signup`, { form: { ...hiddenFields(page.html), email, password, name: 'Test developer' }, cookie: page.cookie, from });
  if (done.status !== 200) throw new Error(`sign-up: ${done.status} ${done.html.slice(0, 300)}`);
  return { email, password };
}

/**
 * Follows an authorization URL through the sign-in page: loads it, submits the form with the
 * credentials, and answers the redirect the service sends back (or the page it shows).
 */
export async function signInAt(authorizationUrl: string, credentials: { email: string; password: string }, from?: string) {
  const page = await visit(authorizationUrl, { from });
  if (page.status !== 200) return { status: page.status, location: page.location, html: page.html };
  const action = new URL('/oauth2/authorize', authorizationUrl).toString();
  const posted = await visit(action, { form: { ...hiddenFields(page.html), ...credentials }, cookie: page.cookie, from });
  return { status: posted.status, location: posted.location, html: posted.html };
}

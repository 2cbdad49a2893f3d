import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { eventually, freePort, httpClient } from '@platform/testing';
import { startApi, type RunningApi } from '../../src/api.js';
import { loadApiConfig } from '../../src/config.js';
import { TEST_AUDIENCE, type TestPlatform } from './platform.js';

/** apps/oauth as its own process on the shared control plane, and an API that trusts it. */
export interface TokenServiceUnderTest {
  issuer: string;
  /** Requests to the token service. */
  oauth: ReturnType<typeof httpClient>;
  /** An API trusting this token service (the shared one trusts a made-up issuer). */
  api: RunningApi;
  trusting: ReturnType<typeof httpClient>;
  close(): Promise<void>;
}

export async function startTokenServiceProcess(
  p: TestPlatform,
  env: Record<string, string> = {},
  apiEnv: Record<string, string> = {},
): Promise<TokenServiceUnderTest> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'apps/oauth/src/main.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: p.controlPlane.url,
      OAUTH_PORT: String(port),
      OAUTH_ISSUER: issuer,
      PUBLIC_BASE_URL: TEST_AUDIENCE,
      LOG_LEVEL: 'error',
      PASSWORD_HASH_LOGN: '10',
      LOGIN_MAX_FAILURES_PER_CLIENT: '100000',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const oauth = httpClient(issuer);
  await eventually(async () => ((await oauth('GET', '/healthz').catch(() => undefined))?.status === 200 ? true : undefined), 30_000, 'the token service');
  const api = await startApi(loadApiConfig({ ...p.env, OAUTH_ISSUER: issuer, REVOCATION_POLL_MS: '200', ...apiEnv }));
  return {
    issuer,
    oauth,
    api,
    trusting: httpClient(api.url),
    async close() {
      await api.close();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** A browser-like visit: no redirects followed, cookies passed by hand. */
export async function visit(url: string, init: { method?: string; form?: Record<string, string>; cookie?: string } = {}) {
  const response = await fetch(url, {
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

/** Signs a developer up through the sign-up page, as a person would. */
export async function signUpDeveloper(issuer: string, options: { email?: string; password?: string } = {}) {
  const email = options.email ?? `dev-${randomBytes(5).toString('hex')}@example.test`;
  const password = options.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const page = await visit(`${issuer}/signup`);
  if (page.status !== 200 || !page.cookie) throw new Error(`sign-up page: ${page.status}`);
  const done = await visit(`${issuer}/signup`, { form: { ...hiddenFields(page.html), email, password, name: 'Test developer' }, cookie: page.cookie });
  if (done.status !== 200) throw new Error(`sign-up: ${done.status} ${done.html.slice(0, 300)}`);
  return { email, password };
}

/**
 * Follows an authorization URL through the sign-in page: loads it, submits the form with the
 * credentials, and answers the redirect the service sends back (or the page it shows).
 */
export async function signInAt(authorizationUrl: string, credentials: { email: string; password: string }) {
  const page = await visit(authorizationUrl);
  if (page.status !== 200) return { status: page.status, location: page.location, html: page.html };
  const action = new URL('/oauth2/authorize', authorizationUrl).toString();
  const posted = await visit(action, { form: { ...hiddenFields(page.html), ...credentials }, cookie: page.cookie });
  return { status: posted.status, location: posted.location, html: posted.html };
}

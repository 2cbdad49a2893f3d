// A browser's part in an authorization request, over plain HTTP: a cookie jar, redirects followed by
// hand, and the login form posted once. It stops at the first redirect that leaves the provider,
// so the relying party's callback is returned to the test rather than fetched.

/** More hops than a sign-in takes (authorize, login page, login, resume, callback). */
const maxRequests = 10;

/** What a browser asks for; oidc-provider renders its error page only for clients that accept HTML. */
const browserAccept = 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8';

/**
 * Follows `authorizationUrl` through the provider at `origin`, signing in with `login` when the
 * login page appears, and returns the URL the provider finally redirects to outside its origin.
 * Throws with the provider's error when it refuses the request, and when it refuses the login.
 */
export async function signInThroughProvider(origin: string, authorizationUrl: string, login: string): Promise<URL> {
  const jar = new CookieJar();
  let url = new URL(authorizationUrl);
  if (url.origin !== origin) throw new Error(`${authorizationUrl} is not on the test OpenID Provider (${origin})`);
  let form: URLSearchParams | undefined;
  let loginPosted = false;
  for (let request = 0; request < maxRequests; request++) {
    const response = await jar.fetch(url, form);
    form = undefined;
    const location = response.headers.get('location');
    if (isRedirect(response.status) && location) {
      url = new URL(location, url);
      if (url.origin !== origin) return refusalChecked(url);
      continue;
    }
    const html = await response.text();
    if (response.status !== 200 || !isLoginPage(html)) throw new Error(`the test OpenID Provider refused the authorization request: ${describePage(response.status, html)}`);
    if (loginPosted) throw new Error(`the test OpenID Provider refused the login "${login}": ${textOf(html, 'login-error') ?? 'no reason given'}`);
    form = new URLSearchParams({ login });
    loginPosted = true;
  }
  throw new Error(`the test OpenID Provider did not redirect out of ${origin} after ${maxRequests} requests`);
}

/** An error response sent to the callback is a refusal too; tests that want it can catch the error. */
function refusalChecked(callback: URL): URL {
  const error = callback.searchParams.get('error');
  if (!error) return callback;
  const description = callback.searchParams.get('error_description');
  throw Object.assign(new Error(`the test OpenID Provider refused the authorization request: ${error}${description ? ` (${description})` : ''}`), { callbackUrl: callback });
}

function isRedirect(status: number): boolean {
  return status >= 300 && status < 400;
}

function isLoginPage(html: string): boolean {
  return html.includes('<form method="post">') && html.includes('name="login"');
}

function describePage(status: number, html: string): string {
  const error = textOf(html, 'error');
  if (error) return `${error} (${textOf(html, 'error_description') || 'no description'})`;
  return `${status} ${html.slice(0, 300)}`;
}

/** The text of the element with this id on one of the provider's own pages. */
function textOf(html: string, id: string): string | undefined {
  const match = new RegExp(`<p id="${id}"[^>]*>([^<]*)</p>`).exec(html);
  return match?.[1].replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
}

interface StoredCookie {
  name: string;
  value: string;
  path: string;
}

/** Just enough of a browser's cookie store for one origin: names, paths and deletions. */
class CookieJar {
  readonly #cookies = new Map<string, StoredCookie>();

  /** GET, or POST of `form`, with the cookies that apply to the URL; redirects are left to the caller. */
  async fetch(url: URL, form?: URLSearchParams): Promise<Response> {
    const cookie = this.headerFor(url);
    const response = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        accept: browserAccept,
        ...(cookie ? { cookie } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form?.toString(),
    });
    for (const line of response.headers.getSetCookie()) this.store(line);
    return response;
  }

  private headerFor(url: URL): string {
    return [...this.#cookies.values()]
      .filter((cookie) => pathMatches(url.pathname, cookie.path))
      .map((cookie) => `${cookie.name}=${cookie.value}`)
      .join('; ');
  }

  private store(setCookie: string): void {
    const [pair, ...attributes] = setCookie.split(';').map((part) => part.trim());
    const separator = pair.indexOf('=');
    const name = pair.slice(0, separator);
    const cookie: StoredCookie = { name, value: pair.slice(separator + 1), path: '/' };
    let expired = false;
    for (const attribute of attributes) {
      const [key, value = ''] = attribute.split('=');
      if (key.toLowerCase() === 'path') cookie.path = value;
      if (key.toLowerCase() === 'expires') expired ||= Date.parse(value) <= Date.now();
      if (key.toLowerCase() === 'max-age') expired ||= Number(value) <= 0;
    }
    const key = `${cookie.path} ${name}`;
    if (expired) this.#cookies.delete(key);
    else this.#cookies.set(key, cookie);
  }
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath || cookiePath === '/') return true;
  return requestPath.startsWith(cookiePath.endsWith('/') ? cookiePath : `${cookiePath}/`);
}

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ForbiddenError } from '@platform/domain';
import { parseCookies } from '../cookie-jar.js';

/*
 * The API family's cookies, as their server SDK parses them: `nile.session-token`,
 * `nile.csrf-token` (NextAuth's `token|mac` double submit) and `nile.callback-url`, each
 * `__Secure-` prefixed when secure (never `__Host-`: the SDK's parsers know only `__Secure-`).
 */

/** What the family surface knows of the process: the CSRF key and the origins apps may call from. */
export interface FamilyAuthSettings {
  /** The key of the CSRF cookie’s MAC: derived from SIGNING_KEY_SECRET_KEYS (apps/api config), the same on every replica. */
  csrfSecret: Uint8Array;
  /** Origins (ALLOWED_ORIGINS and the API's own) whose pages and apps may send cookie-authenticated requests. */
  allowedOrigins: readonly string[];
}

export type FamilyCookie = 'session-token' | 'csrf-token' | 'callback-url' | 'reset' | 'sso-state';

/** A request's view of the family cookies: secure when the SDK says so (`nile-secure-cookies`) or the API is served over https. */
export class FamilyCookies {
  readonly secure: boolean;
  private readonly jar: Map<string, string>;

  constructor(header: (name: string) => string, publicApiUrl: string) {
    this.secure = header('nile-secure-cookies').toLowerCase() === 'true' || new URL(publicApiUrl).protocol === 'https:';
    this.jar = parseCookies(header('cookie'));
  }

  nameOf(cookie: FamilyCookie): string {
    return familyCookieName(cookie, this.secure);
  }

  /** A cookie the SDK itself sets, under its own name (never prefixed), as sent. */
  sent(name: string): string | undefined {
    return this.jar.get(name);
  }

  /** A cookie's value as sent; a secure request reads only the prefixed cookie, which plain http cannot plant. */
  get(cookie: FamilyCookie): string | undefined {
    return this.jar.get(this.nameOf(cookie));
  }

  /** A Set-Cookie value: HttpOnly, SameSite=Lax, Path=/ (or `path`), Secure when secure; maxAge 0 clears it. */
  set(cookie: FamilyCookie, value: string, maxAgeSeconds?: number, path = '/'): string {
    const attributes = [`${this.nameOf(cookie)}=${value}`, `Path=${path}`, 'HttpOnly', 'SameSite=Lax'];
    if (maxAgeSeconds !== undefined) attributes.push(`Max-Age=${maxAgeSeconds}`);
    if (this.secure) attributes.push('Secure');
    return attributes.join('; ');
  }

  clear(cookie: FamilyCookie, path = '/'): string {
    return this.set(cookie, '', 0, path);
  }
}

/** A family cookie's name: `__Secure-` prefixed when secure. */
export function familyCookieName(cookie: FamilyCookie, secure: boolean): string {
  return `${secure ? '__Secure-' : ''}nile.${cookie}`;
}

function macOf(secret: Uint8Array, token: string): string {
  return createHmac('sha256', secret).update(token).digest('hex');
}

/** A new CSRF token and its cookie value (`token|mac`, URL-encoded as NextAuth writes it). */
export function newCsrfToken(secret: Uint8Array): { token: string; cookieValue: string } {
  const token = randomBytes(32).toString('hex');
  return { token, cookieValue: encodeURIComponent(`${token}|${macOf(secret, token)}`) };
}

/** The token of a CSRF cookie whose MAC holds; undefined for a missing, altered or foreign one. */
export function csrfTokenOf(secret: Uint8Array, cookieValue: string | undefined): string | undefined {
  if (!cookieValue) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(cookieValue);
  } catch {
    return undefined;
  }
  const [token, mac, ...rest] = decoded.split('|');
  if (!token || !mac || rest.length > 0) return undefined;
  const expected = Buffer.from(macOf(secret, token));
  const given = Buffer.from(mac);
  return expected.length === given.length && timingSafeEqual(expected, given) ? token : undefined;
}

function csrfRefused(message: string): ForbiddenError {
  return new ForbiddenError('csrf_failed', message);
}

/** The origin of an Origin header, or of a Referer; null when the request has neither. */
function browserOrigin(header: (name: string) => string): string | null {
  const origin = header('origin');
  if (origin) return origin;
  const referer = header('referer');
  if (!referer) return null;
  try {
    return new URL(referer).origin;
  } catch {
    return 'invalid';
  }
}

/** A browser request from a page of a foreign origin is refused, as on the v2 create-user route. */
export function assertAllowedBrowserOrigin(settings: FamilyAuthSettings, header: (name: string) => string): void {
  const from = browserOrigin(header);
  if (from !== null && !settings.allowedOrigins.includes(from)) {
    throw new ForbiddenError('cross_site_request', 'Cookie-authenticated requests must come from an allowed origin');
  }
}

/**
 * The double submit of the sign-in, sign-up and sign-out forms: the body's `csrfToken` must be the
 * token of a CSRF cookie this server made. Checked before anything else happens.
 */
export function assertCsrfDoubleSubmit(settings: FamilyAuthSettings, cookies: FamilyCookies, header: (name: string) => string, csrfToken: string | undefined): void {
  assertAllowedBrowserOrigin(settings, header);
  const token = csrfTokenOf(settings.csrfSecret, cookies.get('csrf-token'));
  if (!token) throw csrfRefused('The CSRF cookie is missing or not valid: GET /auth/csrf first');
  if (!csrfToken) throw csrfRefused('The csrfToken field is required');
  const [a, b] = [Buffer.from(token), Buffer.from(csrfToken)];
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw csrfRefused('The csrfToken field does not match the CSRF cookie');
}

/**
 * The CSRF proof of the REST calls (/me, /tenants, /users...), whose bodies the SDK sends without
 * a token: the `nile-origin` header the SDK always sends, naming an allowed origin. A browser can
 * send no such header to another origin without a CORS preflight, which this API does not grant;
 * the session cookie is SameSite=Lax besides.
 */
export function assertSdkOrigin(settings: FamilyAuthSettings, header: (name: string) => string): void {
  assertAllowedBrowserOrigin(settings, header);
  const origin = header('nile-origin');
  if (!origin) throw csrfRefused('The nile-origin header is required on state-changing calls (the server SDK sends it)');
  if (!settings.allowedOrigins.includes(origin)) {
    throw csrfRefused(`The nile-origin '${origin}' is not an allowed origin: add it to ALLOWED_ORIGINS`);
  }
}

/**
 * Where a mailed link carrying a token may point, when the app asks for its own URL: only on one
 * of the database's own app origins (its auth settings' appOrigins); else null (the link points at
 * this API). ALLOWED_ORIGINS will not do: it is one list for the whole platform, and one company's
 * app could ask for links to another's users and receive their tokens.
 */
export function mailedLinkTarget(appOrigins: readonly string[], url: string | undefined): string | null {
  return urlOnOrigins(appOrigins, url);
}

/** A callback URL on an allowed origin, else null: sign-in never redirects elsewhere. */
export function allowedCallbackUrl(settings: FamilyAuthSettings, url: string | undefined): string | null {
  return urlOnOrigins(settings.allowedOrigins, url);
}

/** `url` when it parses and its origin is one of `origins`, else null. */
function urlOnOrigins(origins: readonly string[], url: string | undefined): string | null {
  if (!url) return null;
  try {
    return origins.includes(new URL(url).origin) ? url : null;
  } catch {
    return null;
  }
}

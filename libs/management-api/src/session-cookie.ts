import { familyCookieName } from './family-auth/family-cookies.js';
import { parseCookies } from './cookie-jar.js';

/** The session cookie a sign-in sets (SPEC: `auth.session-token`). */
export interface SessionCookie {
  name: string;
  /** Sent only over https. */
  secure: boolean;
}

/** Under an https {api_url} the cookie is `__Secure-` prefixed and Secure, so plain http can neither read nor plant it. */
export function sessionCookieFor(publicApiUrl: string): SessionCookie {
  const secure = new URL(publicApiUrl).protocol === 'https:';
  return { name: sessionCookieName(secure), secure };
}

function sessionCookieName(secure: boolean): string {
  return `${secure ? '__Secure-' : ''}auth.session-token`;
}

/** A Set-Cookie value; an empty token with 0 seconds clears the cookie. */
export function sessionCookieHeader(cookie: SessionCookie, token: string, maxAgeSeconds: number): string {
  const attributes = [`${cookie.name}=${token}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`];
  if (cookie.secure) attributes.push('Secure');
  return attributes.join('; ');
}

/** Whether a request carries a session cookie of either surface (the SPEC's or the API family's), under either prefix. */
export function hasSessionCookie(header: string): boolean {
  const cookies = parseCookies(header);
  return [false, true].some((secure) => Boolean(cookies.get(sessionCookieName(secure)) || cookies.get(familyCookieName('session-token', secure))));
}

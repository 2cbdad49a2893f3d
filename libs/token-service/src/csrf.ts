import { randomBytes, timingSafeEqual } from 'node:crypto';

/*
 * Login CSRF defence (double submit): the form carries the same random value as a SameSite=Strict
 * cookie, which a cross-site page can neither read nor send.
 */

/** Under https the cookie is `__Host-` prefixed and Secure, so no plain-http response can plant one. */
function cookieName(issuer: string): string {
  return isHttps(issuer) ? '__Host-oauth_csrf' : 'oauth_csrf';
}

function isHttps(issuer: string): boolean {
  return issuer.startsWith('https:');
}

function cookieValue(cookieHeader: string, name: string): string | undefined {
  for (const part of cookieHeader.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

/** The value a form carries: the browser's cookie when it has a sound one, else a new one and the cookie to set. */
export function csrfToken(cookieHeader: string, issuer: string): { value: string; setCookie?: string } {
  const name = cookieName(issuer);
  const existing = cookieValue(cookieHeader, name);
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { value: existing };
  const value = randomBytes(32).toString('base64url');
  return { value, setCookie: `${name}=${value}; Path=/; HttpOnly; SameSite=Strict${isHttps(issuer) ? '; Secure' : ''}` };
}

/** Whether a posted form's value is the browser's cookie (compared in constant time). */
export function csrfMatches(cookieHeader: string, submitted: string | undefined, issuer: string): boolean {
  const expected = cookieValue(cookieHeader, cookieName(issuer));
  if (!expected || !submitted) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The session cookie a sign-in sets (SPEC: `auth.session-token`). */
export interface SessionCookie {
  name: string;
  /** Sent only over https. */
  secure: boolean;
}

/** Under an https {api_url} the cookie is `__Secure-` prefixed and Secure, so plain http can neither read nor plant it. */
export function sessionCookieFor(publicApiUrl: string): SessionCookie {
  const secure = new URL(publicApiUrl).protocol === 'https:';
  return { name: secure ? '__Secure-auth.session-token' : 'auth.session-token', secure };
}

/** A Set-Cookie value; an empty token with 0 seconds clears the cookie. */
export function sessionCookieHeader(cookie: SessionCookie, token: string, maxAgeSeconds: number): string {
  const attributes = [`${cookie.name}=${token}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`];
  if (cookie.secure) attributes.push('Secure');
  return attributes.join('; ');
}

/** A cookie's value as a request sends it; the first of a repeated name wins. */
export function cookieFromHeader(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim() || undefined;
  }
  return undefined;
}

/** Whether a request carries a session cookie of either surface (the SPEC's or the API family's), under any prefix. */
export function hasSessionCookie(header: string): boolean {
  return ['auth.session-token', '__Secure-auth.session-token', 'nile.session-token', '__Secure-nile.session-token'].some(
    (name) => cookieFromHeader(header, name) !== undefined,
  );
}

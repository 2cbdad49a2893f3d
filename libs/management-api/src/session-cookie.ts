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

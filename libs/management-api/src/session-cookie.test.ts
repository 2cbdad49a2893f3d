import { expect } from 'chai';
import { hasSessionCookie, sessionCookieFor, sessionCookieHeader } from './session-cookie.js';

describe('session cookie', () => {
  it('is auth.session-token, not Secure, under an http {api_url}', () => {
    expect(sessionCookieFor('http://127.0.0.1:4100')).to.deep.equal({ name: 'auth.session-token', secure: false });
  });

  it('is __Secure- prefixed and Secure under an https {api_url}', () => {
    expect(sessionCookieFor('https://api.example.com')).to.deep.equal({ name: '__Secure-auth.session-token', secure: true });
  });

  it('sets the token for the session’s lifetime, HttpOnly and SameSite=Lax', () => {
    expect(sessionCookieHeader({ name: 'auth.session-token', secure: false }, 'abc', 3600)).to.equal(
      'auth.session-token=abc; Path=/; HttpOnly; SameSite=Lax; Max-Age=3600',
    );
    expect(sessionCookieHeader({ name: '__Secure-auth.session-token', secure: true }, 'abc', 60)).to.equal(
      '__Secure-auth.session-token=abc; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure',
    );
  });

  it('clears the cookie with an empty token and no lifetime', () => {
    expect(sessionCookieHeader({ name: '__Secure-auth.session-token', secure: true }, '', 0)).to.equal(
      '__Secure-auth.session-token=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure',
    );
  });
});

describe('hasSessionCookie', () => {
  it('sees the session cookie of either surface under either prefix, and nothing else', () => {
    for (const name of ['auth.session-token', '__Secure-auth.session-token', 'nile.session-token', '__Secure-nile.session-token']) {
      expect(hasSessionCookie(`a=1; ${name}=tok`), name).to.equal(true);
      expect(hasSessionCookie(`${name}=`), `${name} empty`).to.equal(false);
    }
    expect(hasSessionCookie('nile.csrf-token=x; __Host-auth.session-token=y')).to.equal(false);
  });
});

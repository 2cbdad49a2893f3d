import { expect } from 'chai';
import { csrfMatches, csrfToken } from './csrf.js';

describe('csrf double submit', () => {
  it('makes a new value and a SameSite=Strict cookie, __Host- prefixed and Secure under https', () => {
    const plain = csrfToken('', 'http://127.0.0.1:4101');
    expect(plain.value).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(plain.setCookie).to.equal(`oauth_csrf=${plain.value}; Path=/; HttpOnly; SameSite=Strict`);
    const secure = csrfToken('', 'https://auth.example.com');
    expect(secure.setCookie).to.equal(`__Host-oauth_csrf=${secure.value}; Path=/; HttpOnly; SameSite=Strict; Secure`);
  });

  it('keeps a sound cookie the browser sent, and replaces one that is not', () => {
    const value = 'a'.repeat(43);
    expect(csrfToken(`x=1; oauth_csrf=${value}`, 'http://127.0.0.1')).to.deep.equal({ value });
    expect(csrfToken('oauth_csrf=short', 'http://127.0.0.1').setCookie).to.be.a('string');
    expect(csrfToken(`oauth_csrf=${value}`, 'https://auth.example.com').setCookie, 'the cookie of plain http does not count under https').to.be.a('string');
  });

  it('matches a posted value only against the cookie of the same name', () => {
    const value = 'b'.repeat(43);
    expect(csrfMatches(`oauth_csrf=${value}`, value, 'http://127.0.0.1')).to.equal(true);
    expect(csrfMatches(`oauth_csrf=${value}`, 'c'.repeat(43), 'http://127.0.0.1')).to.equal(false);
    expect(csrfMatches(`oauth_csrf=${value}`, undefined, 'http://127.0.0.1')).to.equal(false);
    expect(csrfMatches('', value, 'http://127.0.0.1')).to.equal(false);
    expect(csrfMatches(`oauth_csrf=${value}`, value, 'https://auth.example.com')).to.equal(false);
    expect(csrfMatches(`__Host-oauth_csrf=${value}`, value, 'https://auth.example.com')).to.equal(true);
  });
});

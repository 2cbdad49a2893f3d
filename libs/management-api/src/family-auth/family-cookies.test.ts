import { expect } from 'chai';
import { ForbiddenError } from '@platform/domain';
import { FamilyCookies, allowedCallbackUrl, assertCsrfDoubleSubmit, assertSdkOrigin, csrfTokenOf, mailedLinkTarget, newCsrfToken, type FamilyAuthSettings } from './family-cookies.js';

const settings: FamilyAuthSettings = { csrfSecret: Buffer.alloc(32, 1), allowedOrigins: ['http://app.test'] };

function headers(values: Record<string, string>) {
  return (name: string) => values[name.toLowerCase()] ?? '';
}

function refusal(fn: () => void): { code: string } | null {
  try {
    fn();
    return null;
  } catch (error) {
    if (!(error instanceof ForbiddenError)) throw error;
    return { code: error.code };
  }
}

describe('the API family’s cookies', () => {
  it('names cookies nile.*, and __Secure-nile.* when the SDK asks for secure cookies or the API is https', () => {
    expect(new FamilyCookies(headers({}), 'http://api.test').nameOf('session-token')).to.equal('nile.session-token');
    expect(new FamilyCookies(headers({ 'nile-secure-cookies': 'true' }), 'http://api.test').nameOf('csrf-token')).to.equal('__Secure-nile.csrf-token');
    expect(new FamilyCookies(headers({ 'nile-secure-cookies': 'false' }), 'https://api.test').nameOf('callback-url')).to.equal('__Secure-nile.callback-url');
  });

  it('reads only the cookie of its mode, and writes HttpOnly, SameSite=Lax, Secure when secure', () => {
    const jar = 'nile.session-token=plain; __Secure-nile.session-token=prefixed';
    expect(new FamilyCookies(headers({ cookie: jar }), 'http://api.test').get('session-token')).to.equal('plain');
    const secure = new FamilyCookies(headers({ cookie: jar }), 'https://api.test');
    expect(secure.get('session-token')).to.equal('prefixed');
    expect(secure.set('session-token', 'v', 60)).to.equal('__Secure-nile.session-token=v; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure');
  });

  it('checks the CSRF cookie’s MAC: its own token back, nothing for another key, an altered token or junk', () => {
    const { token, cookieValue } = newCsrfToken(settings.csrfSecret);
    expect(cookieValue).to.equal(`${token}%7C${cookieValue.split('%7C')[1]}`);
    expect(csrfTokenOf(settings.csrfSecret, cookieValue)).to.equal(token);
    expect(csrfTokenOf(settings.csrfSecret, decodeURIComponent(cookieValue))).to.equal(token);
    expect(csrfTokenOf(Buffer.alloc(32, 2), cookieValue)).to.equal(undefined);
    expect(csrfTokenOf(settings.csrfSecret, `0${cookieValue.slice(1)}`)).to.equal(undefined);
    for (const junk of [undefined, '', '%E0%A4%A', 'a|b|c', token]) expect(csrfTokenOf(settings.csrfSecret, junk)).to.equal(undefined);
  });

  it('takes a double submit only with the cookie’s own token, from an allowed origin or none', () => {
    const { token, cookieValue } = newCsrfToken(settings.csrfSecret);
    const submit = (values: Record<string, string>, field: string | undefined) =>
      refusal(() => assertCsrfDoubleSubmit(settings, new FamilyCookies(headers(values), 'http://api.test'), headers(values), field));
    expect(submit({ cookie: `nile.csrf-token=${cookieValue}` }, token)).to.equal(null);
    expect(submit({ cookie: `nile.csrf-token=${cookieValue}`, origin: 'http://app.test' }, token)).to.equal(null);
    expect(submit({ cookie: `nile.csrf-token=${cookieValue}`, origin: 'https://evil.test' }, token)).to.deep.equal({ code: 'cross_site_request' });
    expect(submit({ cookie: `nile.csrf-token=${cookieValue}` }, undefined)).to.deep.equal({ code: 'csrf_failed' });
    expect(submit({ cookie: `nile.csrf-token=${cookieValue}` }, 'f'.repeat(64))).to.deep.equal({ code: 'csrf_failed' });
    expect(submit({}, token)).to.deep.equal({ code: 'csrf_failed' });
  });

  it('takes a REST change only with an allowed nile-origin', () => {
    expect(refusal(() => assertSdkOrigin(settings, headers({ 'nile-origin': 'http://app.test' })))).to.equal(null);
    expect(refusal(() => assertSdkOrigin(settings, headers({})))).to.deep.equal({ code: 'csrf_failed' });
    expect(refusal(() => assertSdkOrigin(settings, headers({ 'nile-origin': 'http://other.test' })))).to.deep.equal({ code: 'csrf_failed' });
    expect(refusal(() => assertSdkOrigin(settings, headers({ 'nile-origin': 'http://app.test', referer: 'https://evil.test/page' })))).to.deep.equal({ code: 'cross_site_request' });
  });

  it('keeps a callback URL only on an allowed origin', () => {
    expect(allowedCallbackUrl(settings, 'http://app.test/after?x=1')).to.equal('http://app.test/after?x=1');
    for (const url of [undefined, '', '/relative', 'https://evil.test/', 'javascript:alert(1)']) expect(allowedCallbackUrl(settings, url)).to.equal(null);
    // A link carrying a token goes to an app only on the database's own app origins, never on ALLOWED_ORIGINS alone.
    expect(mailedLinkTarget([], 'http://app.test/api/auth/reset-password')).to.equal(null);
    expect(mailedLinkTarget(['http://app.test'], 'http://app.test/api/auth/reset-password')).to.equal('http://app.test/api/auth/reset-password');
    for (const url of [undefined, 'https://evil.test/grab', 'not a url']) expect(mailedLinkTarget(['http://app.test'], url)).to.equal(null);
  });
});

import { expect } from 'chai';
import { ValidationError } from '../errors.js';
import { assertRedirectUri, emailDomainOf, normaliseEmailDomains } from './registrations.js';

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(ValidationError);
    return (error as ValidationError).code;
  }
  return undefined;
}

describe('SSO registration rules', function () {
  it('lower-cases and deduplicates email domains, keeping their order', function () {
    expect(normaliseEmailDomains([' Corp.Example ', 'corp.example', 'eu.corp.example'])).to.deep.equal(['corp.example', 'eu.corp.example']);
  });

  it('refuses no domains, more than 50, and anything that is not a domain name', function () {
    for (const domains of [[], ['localhost'], ['corp..example'], ['-corp.example'], ['corp.example.'], ['a@corp.example'], ['*.corp.example'], ['corp.123']]) {
      expect(codeOf(() => normaliseEmailDomains(domains)), JSON.stringify(domains)).to.equal('invalid_email_domains');
    }
    expect(codeOf(() => normaliseEmailDomains(Array.from({ length: 51 }, (_, i) => `d${i}.example`)))).to.equal('invalid_email_domains');
    expect(codeOf(() => normaliseEmailDomains(Array.from({ length: 50 }, (_, i) => `d${i}.example`)))).to.equal(undefined);
  });

  it('takes https redirect URIs, and http only to this machine', function () {
    for (const uri of ['https://app.example/sso', 'https://app.example:8443/cb?x=1', 'http://localhost:3000/cb', 'http://127.0.0.1/cb', 'http://[::1]:5000/cb']) {
      expect(codeOf(() => assertRedirectUri(uri)), uri).to.equal(undefined);
    }
    for (const uri of ['http://app.example/sso', 'javascript:alert(1)', 'data:text/html,x', '/relative', 'https://u:p@app.example/', 'https://app.example/#frag', 'ftp://app.example/']) {
      expect(codeOf(() => assertRedirectUri(uri)), uri).to.equal('invalid_redirect_uri');
    }
  });

  it('finds an email’s domain after its last @', function () {
    expect(emailDomainOf('Ann@Corp.Example')).to.equal('corp.example');
    expect(emailDomainOf('"odd@name"@corp.example')).to.equal('corp.example');
    expect(emailDomainOf('no-at-sign')).to.equal(null);
    expect(emailDomainOf('trailing@')).to.equal(null);
  });
});

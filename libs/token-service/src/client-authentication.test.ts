import { expect } from 'chai';
import { OAuthError } from '@platform/domain';
import { presentedCredentials } from './client-authentication.js';

function basic(raw: string): string {
  return `Basic ${Buffer.from(raw).toString('base64')}`;
}

function refusal(run: () => unknown): { error: string; message: string } {
  try {
    run();
  } catch (caught) {
    if (caught instanceof OAuthError) return { error: caught.error, message: caught.message };
    throw caught;
  }
  throw new Error('expected an OAuthError');
}

describe('presentedCredentials', () => {
  it('reads the form when there is no Basic header', () => {
    expect(presentedCredentials('', { client_id: 'cli_1', client_secret: 's' })).to.deep.equal({ clientId: 'cli_1', clientSecret: 's', basic: false });
    expect(presentedCredentials('Bearer x', {})).to.deep.equal({ clientId: undefined, clientSecret: undefined, basic: false });
  });

  it('decodes HTTP Basic, form-urlencoded inside (RFC 6749 section 2.3.1), with a matching client_id allowed in the form', () => {
    expect(presentedCredentials(basic('cli%3A1:p%2Bw+d'), {})).to.deep.equal({ clientId: 'cli:1', clientSecret: 'p+w d', basic: true });
    expect(presentedCredentials(`bAsIc  ${Buffer.from('cli_1:s').toString('base64')}`, { client_id: 'cli_1' })).to.deep.equal({ clientId: 'cli_1', clientSecret: 's', basic: true });
  });

  it('refuses two methods, a differing client_id, repeated fields and malformed Basic credentials', () => {
    expect(refusal(() => presentedCredentials(basic('cli_1:s'), { client_secret: 's' }))).to.deep.equal({ error: 'invalid_request', message: 'Use one client authentication method, not two' });
    expect(refusal(() => presentedCredentials(basic('cli_1:s'), { client_id: 'cli_2' }))).to.deep.equal({ error: 'invalid_request', message: 'client_id differs from the Basic credentials' });
    expect(refusal(() => presentedCredentials('', { client_id: ['a', 'b'] }))).to.deep.equal({ error: 'invalid_request', message: "'client_id' must appear once" });
    expect(refusal(() => presentedCredentials(basic('no colon'), {}))).to.deep.equal({ error: 'invalid_client', message: 'Malformed Basic credentials' });
    expect(refusal(() => presentedCredentials(basic('cli_1:%E0%A4%A'), {}))).to.deep.equal({ error: 'invalid_client', message: 'Malformed Basic credentials' });
  });
});

import { expect } from 'chai';
import { appCallbackUrl, sentQuery } from './sso.routes.js';

describe('family SSO routes: what the SDK forwards', function () {
  it('undoes exactly the query the SDK’s callback proxy doubles (?q?q), and nothing else', function () {
    const sent = 'code=abc&state=s-1&iss=http%3A%2F%2F127.0.0.1%3A5000';
    expect(Object.fromEntries(sentQuery(`${sent}?${sent}`))).to.deep.equal({ code: 'abc', state: 's-1', iss: 'http://127.0.0.1:5000' });
    expect(Object.fromEntries(sentQuery(sent))).to.deep.equal({ code: 'abc', state: 's-1', iss: 'http://127.0.0.1:5000' });
    // Two different halves are not a doubling: the repeated state stays repeated (and is refused as absent).
    expect(sentQuery('code=abc&state=a?code=abc&state=b').getAll('state')).to.deep.equal(['a?code=abc', 'b']);
    expect(sentQuery('?').toString()).to.equal('');
    expect(sentQuery('').toString()).to.equal('');
  });

  it('names the app’s callback route under the SDK’s /api prefix as the redirect URI', function () {
    expect(appCallbackUrl('https://app.example.com', 'corp.idp')).to.equal('https://app.example.com/api/auth/callback/corp.idp');
  });
});

import { expect } from 'chai';
import type { OAuthClient } from '../model.js';
import { OAuthError } from './clients.js';
import { checkAuthorizationRequest, parseScopes, redirectUriMatches } from './grants.js';

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

function client(overrides: Partial<OAuthClient> = {}): OAuthClient {
  return { id: 'cli_1', workspaceId: null, name: 'CLI', type: 'public', redirectUris: ['http://127.0.0.1/callback'], created: new Date(0), ...overrides };
}

function check(query: Record<string, string | undefined>, registered: OAuthClient | null = client()) {
  return checkAuthorizationRequest(
    { clients: { findForAuthentication: async (id) => (registered && id === registered.id ? { client: registered, secretDigest: null } : null) }, settings: { issuer: 'https://auth.test' } },
    { response_type: 'code', client_id: 'cli_1', redirect_uri: 'http://127.0.0.1:5000/callback', code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 's1', ...query },
  );
}

describe('grants', () => {
  describe('redirectUriMatches', () => {
    it('matches exactly, and a loopback URI registered without a port on any port', () => {
      expect(redirectUriMatches(['https://app.test/cb'], 'https://app.test/cb')).to.equal(true);
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'http://127.0.0.1:49152/callback')).to.equal(true);
      expect(redirectUriMatches(['http://[::1]/callback'], 'http://[::1]:8080/callback')).to.equal(true);
    });

    it('refuses anything else: a slash, a path, a host, a scheme, a query, a registered port', () => {
      expect(redirectUriMatches(['https://app.test/cb'], 'https://app.test/cb/')).to.equal(false);
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'http://127.0.0.1:5000/callback/')).to.equal(false);
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'http://127.0.0.1:5000/callback?x=1')).to.equal(false);
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'http://127.0.0.2:5000/callback')).to.equal(false);
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'https://127.0.0.1:5000/callback')).to.equal(false);
      expect(redirectUriMatches(['http://127.0.0.1:4000/callback'], 'http://127.0.0.1:5000/callback')).to.equal(false);
      expect(redirectUriMatches(['https://app.test/cb'], 'https://app.test:443/cb')).to.equal(false);
      // Not a port at all: refused here, so no later URL parsing can fail on it.
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'http://127.0.0.1:99999/callback')).to.equal(false);
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'http://127.0.0.1:0/callback')).to.equal(false);
      expect(redirectUriMatches(['http://127.0.0.1/callback'], 'http://127.0.0.1:065535/callback')).to.equal(false);
    });
  });

  describe('parseScopes', () => {
    it('gives every scope when none is asked for, and exactly the ones named otherwise', () => {
      expect(parseScopes(undefined)).to.deep.equal(['api:read', 'api:write']);
      expect(parseScopes('  ')).to.deep.equal(['api:read', 'api:write']);
      expect(parseScopes('api:write api:read api:read')).to.deep.equal(['api:read', 'api:write']);
      expect(parseScopes('api:read', ['api:read'])).to.deep.equal(['api:read']);
    });

    it('refuses a scope outside what is allowed with invalid_scope', () => {
      for (const [requested, allowed] of [['admin', undefined], ['api:write', ['api:read']]] as const) {
        const error = (() => {
          try {
            parseScopes(requested, allowed);
          } catch (caught) {
            return caught;
          }
        })();
        expect(error).to.be.instanceOf(OAuthError);
        expect(error).to.have.property('error', 'invalid_scope');
      }
    });
  });

  describe('checkAuthorizationRequest', () => {
    it('accepts a complete request for a registered loopback URI on any port', async () => {
      const checked = await check({});
      expect(checked.ok).to.equal(true);
      if (checked.ok) expect(checked.request).to.include({ redirectUri: 'http://127.0.0.1:5000/callback', state: 's1', codeChallenge: CHALLENGE });
    });

    it('shows the error itself, never redirecting, when the client or its redirect URI cannot be trusted', async () => {
      for (const query of [{ client_id: undefined }, { client_id: 'cli_unknown' }, { redirect_uri: undefined }, { redirect_uri: 'http://127.0.0.1:5000/callback/' }, { redirect_uri: 'https://evil.test/callback' }]) {
        const checked = await check(query);
        expect(checked, JSON.stringify(query)).to.have.property('shownHere');
      }
    });

    it('sends other errors back to the client with state and iss', async () => {
      const cases: [Record<string, string | undefined>, string][] = [
        [{ response_type: 'token' }, 'unsupported_response_type'],
        [{ code_challenge: undefined }, 'invalid_request'],
        [{ code_challenge_method: 'plain' }, 'invalid_request'],
        [{ code_challenge_method: undefined }, 'invalid_request'],
        [{ code_challenge: 'short' }, 'invalid_request'],
        [{ scope: 'admin' }, 'invalid_scope'],
      ];
      for (const [query, error] of cases) {
        const checked = await check(query);
        expect(checked, JSON.stringify(query)).to.have.property('redirectTo');
        const url = new URL((checked as { redirectTo: string }).redirectTo);
        expect(url.origin + url.pathname).to.equal('http://127.0.0.1:5000/callback');
        expect(url.searchParams.get('error'), JSON.stringify(query)).to.equal(error);
        expect(url.searchParams.get('state')).to.equal('s1');
        expect(url.searchParams.get('iss')).to.equal('https://auth.test');
        expect(url.searchParams.has('code')).to.equal(false);
      }
    });
  });
});

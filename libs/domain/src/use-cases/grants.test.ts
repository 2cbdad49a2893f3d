import { expect } from 'chai';
import type { OAuthClient } from '../model.js';
import { OAuthError } from '../oauth-errors.js';
import { authenticateClient, checkAuthorizationRequest, exactRedirectUri, parseScopes, redirectUriMatches } from './grants.js';

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

function client(overrides: Partial<OAuthClient> = {}): OAuthClient {
  return { id: 'cli_1', workspaceId: null, name: 'CLI', type: 'public', redirectUris: ['http://127.0.0.1/callback'], created: new Date(0), ...overrides };
}

/** Looks up `registered` only, and remembers every id it was asked for. */
function lookup(registered: OAuthClient | null, secretDigest: string | null = null) {
  const asked: string[] = [];
  return {
    asked,
    findForAuthentication: async (id: string) => {
      asked.push(id);
      return registered && id === registered.id ? { client: registered, secretDigest } : null;
    },
  };
}

function check(query: Record<string, string | undefined>, registered: OAuthClient | null = client(), clients = lookup(registered)) {
  return checkAuthorizationRequest(
    { clients, settings: { issuer: 'https://auth.test' } },
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

  describe('exactRedirectUri', () => {
    it('writes out the port of a portless loopback http URI, which then matches itself only', () => {
      expect(exactRedirectUri('http://localhost/console')).to.equal('http://localhost:80/console');
      expect(exactRedirectUri('http://127.0.0.1')).to.equal('http://127.0.0.1:80');
      expect(exactRedirectUri('http://[::1]?x=1')).to.equal('http://[::1]:80?x=1');
      for (const unchanged of ['http://127.0.0.1:4100/console', 'https://localhost/console', 'http://localhost.example/console', 'http://api.test/console']) {
        expect(exactRedirectUri(unchanged)).to.equal(unchanged);
      }
      const registered = [exactRedirectUri('http://127.0.0.1/console')];
      expect(redirectUriMatches(registered, 'http://127.0.0.1:80/console')).to.equal(true);
      expect(redirectUriMatches(registered, 'http://127.0.0.1:5000/console')).to.equal(false);
      expect(redirectUriMatches(registered, 'http://127.0.0.1/console')).to.equal(false);
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

    it('never looks up a client_id that cannot be one', async () => {
      const clients = lookup(client());
      for (const clientId of ['cli 1', 'cli_1/../x', 'x'.repeat(65), 'clé']) {
        expect(await check({ client_id: clientId }, client(), clients), clientId).to.deep.equal({
          ok: false,
          shownHere: 'The application that sent you here is not registered.',
        });
      }
      expect(clients.asked).to.deep.equal([]);
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

  describe('authenticateClient', () => {
    const secrets = { newClientId: () => 'unused', generate: () => ({ secret: 's', digest: 'd' }), matches: (secret: string, digest: string) => `digest:${secret}` === digest };
    const confidential = client({ id: 'cli_2', type: 'confidential', workspaceId: 'ws-1' });

    async function refusal(promise: Promise<unknown>) {
      const error = await promise.then(() => undefined, (caught: unknown) => caught);
      expect(error).to.be.instanceOf(OAuthError);
      return { error: (error as OAuthError).error, message: (error as OAuthError).message };
    }

    it('accepts a confidential client with its secret, and a public client that sends none', async () => {
      expect(await authenticateClient({ clients: lookup(confidential, 'digest:right'), secrets }, { clientId: 'cli_2', clientSecret: 'right' })).to.equal(confidential);
      expect(await authenticateClient({ clients: lookup(client()), secrets }, { clientId: 'cli_1', clientSecret: undefined })).to.deep.equal(client());
    });

    it('refuses every failure as invalid_client, and never looks up an id that cannot be one', async () => {
      const clients = lookup(confidential, 'digest:right');
      const cases: [string | undefined, string | undefined, string][] = [
        [undefined, undefined, 'Client authentication is required'],
        ['cli_2', 'wrong', 'Client authentication failed'],
        ['cli_unknown', 'right', 'Client authentication failed'],
        ['cli 2', 'right', 'Client authentication failed'],
        ['x'.repeat(65), 'right', 'Client authentication failed'],
      ];
      for (const [clientId, clientSecret, message] of cases) {
        expect(await refusal(authenticateClient({ clients, secrets }, { clientId, clientSecret })), String(clientId)).to.deep.equal({ error: 'invalid_client', message });
      }
      expect(clients.asked).to.deep.equal(['cli_2', 'cli_unknown']);
      expect(await refusal(authenticateClient({ clients: lookup(client()), secrets }, { clientId: 'cli_1', clientSecret: 'x' }))).to.deep.equal({
        error: 'invalid_client',
        message: 'A public client has no secret',
      });
    });
  });
});

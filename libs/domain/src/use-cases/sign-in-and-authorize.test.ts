import { expect } from 'chai';
import type { OAuthClient } from '../model.js';
import type { AuthorizationCodeGrant, GrantStore } from '../oauth-ports.js';
import { failure } from './assertions.test-support.js';
import { fakePlatform, NOW } from './fakes.test-support.js';
import { digestOf, type AuthorizationRequest } from './grants.js';
import { signInAndAuthorize } from './sign-in-and-authorize.js';

const ADDRESS = '198.51.100.7';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

/** Keeps saved codes; nothing else is used by sign-in. */
function codeStore() {
  const codes = new Map<string, AuthorizationCodeGrant>();
  const unused = async (): Promise<never> => {
    throw new Error('not used by sign-in');
  };
  const store: GrantStore = {
    saveCode: async (digest, grant) => void codes.set(digest, grant),
    redeemCode: unused,
    saveRefreshToken: unused,
    findRefreshToken: unused,
    useRefreshToken: unused,
    findFamily: unused,
    revokeFamily: unused,
  };
  return { codes, store };
}

async function setUp(client: Partial<OAuthClient> = {}) {
  const { deps, acme } = fakePlatform();
  const developer = await deps.developers.createWithPassword({ email: 'ada@example.com', name: 'Ada', passwordHash: 'hash:correct horse' });
  const { codes, store } = codeStore();
  const request: AuthorizationRequest = {
    client: { id: 'platform-cli', workspaceId: null, name: 'CLI', type: 'public', redirectUris: ['http://127.0.0.1/callback'], created: NOW, ...client },
    redirectUri: 'http://127.0.0.1:5000/callback',
    scopes: ['api:read'],
    state: 'st',
    codeChallenge: CHALLENGE,
  };
  const settings = { clock: { now: () => NOW }, codeTtlSeconds: 60, refreshTtlSeconds: 3600, issuer: 'https://auth.test' };
  return { deps: { ...deps, grants: store, settings }, developer, codes, request, acme };
}

describe('signInAndAuthorize', () => {
  it('signs the developer in and sends the browser back with a code for the request, state and iss', async () => {
    const { deps, developer, codes, request } = await setUp();
    const location = new URL(await signInAndAuthorize(deps, request, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS));
    expect(location.origin + location.pathname).to.equal('http://127.0.0.1:5000/callback');
    expect(location.searchParams.get('state')).to.equal('st');
    expect(location.searchParams.get('iss')).to.equal('https://auth.test');
    const code = location.searchParams.get('code') as string;
    expect(codes.get(digestOf(code))).to.deep.equal({
      clientId: 'platform-cli',
      developerId: developer.id,
      workspaceId: null,
      redirectUri: 'http://127.0.0.1:5000/callback',
      codeChallenge: CHALLENGE,
      scopes: ['api:read'],
      expires: new Date(NOW.getTime() + 60_000),
    });
  });

  it('refuses a wrong password as authenticateDeveloper does, and issues no code', async () => {
    const { deps, codes, request } = await setUp();
    expect(await failure(signInAndAuthorize(deps, request, { email: 'ada@example.com', password: 'wrong horse' }, ADDRESS))).to.deep.equal({
      name: 'UnauthenticatedError',
      kind: 'unauthenticated',
      code: 'authentication_failed',
      message: 'Email or password is incorrect',
    });
    expect(codes.size).to.equal(0);
  });

  it("sends a developer who is not a member of the client's workspace back with access_denied", async () => {
    const { deps, codes, request, acme } = await setUp();
    const location = new URL(
      await signInAndAuthorize(deps, { ...request, client: { ...request.client, workspaceId: acme.id } }, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS),
    );
    expect(location.searchParams.get('error')).to.equal('access_denied');
    expect(location.searchParams.get('state')).to.equal('st');
    expect(location.searchParams.has('code')).to.equal(false);
    expect(codes.size).to.equal(0);
  });
});

// A real OpenID Provider for tests of single sign-on: oidc-provider (a certified implementation)
// in-process on a loopback port, with accounts and clients registered by the test, a login page a
// headless browser can use, and hooks for adversarial answers (a rewritten discovery document,
// re-signed ID tokens with altered claims).
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompactSign, decodeJwt, decodeProtectedHeader } from 'jose';
import type { Middleware } from 'koa';
// @ts-expect-error -- oidc-provider 9 ships no typings; the few members used are typed in openid-provider-interactions.ts.
import OidcProvider from 'oidc-provider';
import { signInThroughProvider } from './openid-provider-browser.js';
import { grantRequestedScopes, renderProviderError, serveLoginPage, type OidcProviderApp } from './openid-provider-interactions.js';
import { storeAdapterFactory, storeClient, type ProviderStore } from './openid-provider-store.js';

export interface TestAccount {
  sub: string;
  email?: string;
  /** Defaults to true when the account has an email. */
  emailVerified?: boolean;
  name?: string;
  givenName?: string;
  familyName?: string;
}

/** A confidential client; it may authenticate with client_secret_basic or client_secret_post. */
export interface TestOidcClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface TestOpenIdProvider {
  /** e.g. http://127.0.0.1:PORT (no trailing slash) */
  issuer: string;
  /** `${issuer}/.well-known/openid-configuration` */
  configUrl: string;
  /** http://127.0.0.1:PORT */
  origin: string;
  addAccount(account: TestAccount): void;
  addClient(client: TestOidcClient): void;
  /** When set, the discovery document served is this function's result (adversarial tests: wrong issuer, missing endpoints). */
  discoveryOverride: ((document: Record<string, unknown>) => Record<string, unknown>) | null;
  /** When set, ID tokens the token endpoint returns have their claims rewritten by it and are re-signed with the provider's own key and kid (adversarial tests: another aud, another nonce, expired). */
  idTokenOverride: ((claims: Record<string, unknown>) => Record<string, unknown>) | null;
  /** Every request the provider received, as `METHOD path?query`, in order (to assert that nothing was fetched). */
  readonly requests: string[];
  /** A URL on the provider that answers 302 to `target` (tests of redirects). */
  redirectUrl(target: string): string;
  /**
   * Completes an authorization request as a browser would (cookie jar, redirects, the login form
   * posted as the account with this sub) and returns the URL the provider finally redirects to
   * outside its own origin, the relying party's callback with code, state and iss, without
   * fetching it. Throws with the provider's error when the authorization request is refused.
   */
  signIn(authorizationUrl: string, sub: string): Promise<URL>;
  close(): Promise<void>;
}

const ProviderClass = OidcProvider as new (issuer: string, configuration: object) => OidcProviderApp;

const discoveryPath = '/.well-known/openid-configuration';
const tokenPath = '/token';
const redirectPath = '/test-redirect';

/** Starts the provider on 127.0.0.1 at a free port; its issuer is that plain-HTTP origin. */
export async function startTestOpenIdProvider(): Promise<TestOpenIdProvider> {
  const server = createServer();
  const origin = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const accounts = new Map<string, TestAccount>();
  const store: ProviderStore = new Map();
  const provider = new ProviderClass(origin, providerConfiguration(origin, privateKey, accounts, store));
  provider.proxy = false;
  provider.on('server_error', (_ctx, error) => console.error('test OpenID Provider server_error:', error));

  const harness: TestOpenIdProvider = {
    issuer: origin,
    configUrl: `${origin}${discoveryPath}`,
    origin,
    addAccount: (account) => void accounts.set(account.sub, { ...account }),
    addClient: (client) => storeClient(store, clientMetadata(client)),
    discoveryOverride: null,
    idTokenOverride: null,
    requests: [],
    redirectUrl: (target) => `${origin}${redirectPath}?${new URLSearchParams({ to: target })}`,
    signIn: (authorizationUrl, sub) => signInThroughProvider(origin, authorizationUrl, sub),
    close: () => closeServer(server),
  };
  provider.use(recordRequests(harness.requests));
  provider.use(answerTestRedirects());
  provider.use(serveLoginPage(provider, (login) => findByLogin(accounts, login)));
  provider.use(overrideDiscovery(harness));
  provider.use(rewriteIdTokens(harness, privateKey));
  server.on('request', provider.callback());
  return harness;
}

/**
 * The oidc-provider configuration (see its lib/helpers/defaults.js). Everything a relying party
 * meets is set explicitly, and the defaults that print "you SHOULD change" notices are replaced,
 * so a test run shows nothing from the provider unless something failed.
 */
function providerConfiguration(origin: string, privateKey: KeyObject, accounts: Map<string, TestAccount>, store: ProviderStore): object {
  const signingJwk = { ...privateKey.export({ format: 'jwk' }), kid: `test-rs256-${randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' };
  // Cookies are per host, not per port: names with the port keep them apart from the relying
  // party's (also on 127.0.0.1) and from another test provider's in the same browser.
  const cookiePrefix = `op${new URL(origin).port}`;
  return {
    adapter: storeAdapterFactory(store),
    jwks: { keys: [signingJwk] },
    findAccount: async (_ctx: unknown, sub: string) => {
      const account = accounts.get(sub);
      return account && { accountId: sub, claims: async () => accountClaims(account) };
    },
    scopes: ['openid', 'email', 'profile'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'given_name', 'family_name'] },
    // By default a code flow's ID token carries only sub, leaving the rest to userinfo; the
    // relying party reads email and name from the ID token.
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    clientBasedCORS: () => false,
    // Not Secure: ctx.secure is false on plain HTTP, which is what lets a browser keep them here.
    cookies: {
      keys: [randomBytes(32).toString('base64url')],
      names: { session: `${cookiePrefix}_session`, interaction: `${cookiePrefix}_interaction`, resume: `${cookiePrefix}_interaction_resume` },
    },
    features: { devInteractions: { enabled: false } },
    interactions: { url: async (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    loadExistingGrant: grantRequestedScopes,
    renderError: renderProviderError,
    ttl: { AccessToken: 3600, AuthorizationCode: 60, Grant: 3600, IdToken: 3600, Interaction: 600, Session: 3600 },
  };
}

function clientMetadata(client: TestOidcClient): Record<string, unknown> & { client_id: string } {
  return {
    client_id: client.clientId,
    client_secret: client.clientSecret,
    redirect_uris: [...client.redirectUris],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    // oidc-provider accepts client_secret_post too from a client registered for basic.
    token_endpoint_auth_method: 'client_secret_basic',
  };
}

/** The standard claims of an account, leaving out what it does not have. */
function accountClaims(account: TestAccount): Record<string, unknown> {
  const claims: Record<string, unknown> = {
    sub: account.sub,
    email: account.email,
    email_verified: account.email === undefined ? account.emailVerified : (account.emailVerified ?? true),
    name: account.name,
    given_name: account.givenName,
    family_name: account.familyName,
  };
  return Object.fromEntries(Object.entries(claims).filter(([, value]) => value !== undefined));
}

function findByLogin(accounts: Map<string, TestAccount>, login: string): TestAccount | undefined {
  return accounts.get(login) ?? [...accounts.values()].find((account) => account.email !== undefined && account.email === login);
}

function recordRequests(requests: string[]): Middleware {
  return async function recordRequest(ctx, next) {
    requests.push(`${ctx.method} ${ctx.url}`);
    await next();
  };
}

function answerTestRedirects(): Middleware {
  return async function testRedirect(ctx, next) {
    if (ctx.path !== redirectPath) return next();
    const target = ctx.query.to;
    if (typeof target !== 'string') {
      ctx.status = 400;
      ctx.body = 'the query parameter "to" is required';
      return;
    }
    ctx.status = 302;
    ctx.set('location', target);
  };
}

function overrideDiscovery(harness: TestOpenIdProvider): Middleware {
  return async function discoveryOverride(ctx, next) {
    await next();
    const override = harness.discoveryOverride;
    if (!override || ctx.path !== discoveryPath || ctx.status !== 200 || !isRecord(ctx.body)) return;
    ctx.body = override(structuredClone(ctx.body));
  };
}

/** Rewrites the token endpoint's ID token only; the access token and the rest of the answer stay as issued. */
function rewriteIdTokens(harness: TestOpenIdProvider, privateKey: KeyObject): Middleware {
  return async function idTokenOverride(ctx, next) {
    await next();
    const override = harness.idTokenOverride;
    if (!override || ctx.path !== tokenPath || !isRecord(ctx.body) || typeof ctx.body.id_token !== 'string') return;
    ctx.body = { ...ctx.body, id_token: await resignJwt(ctx.body.id_token, override, privateKey) };
  };
}

/** The same header (alg, kid, typ) and the provider's own key, so that only the claims differ. */
async function resignJwt(jwt: string, rewrite: (claims: Record<string, unknown>) => Record<string, unknown>, privateKey: KeyObject): Promise<string> {
  const header = decodeProtectedHeader(jwt);
  if (!header.alg) throw new Error('the ID token has no alg');
  const claims = rewrite(decodeJwt(jwt));
  return new CompactSign(new TextEncoder().encode(JSON.stringify(claims))).setProtectedHeader({ ...header, alg: header.alg }).sign(privateKey);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Drops kept-alive connections too, so nothing holds the process open after the tests. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}

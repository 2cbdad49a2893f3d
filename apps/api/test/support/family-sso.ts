import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Server } from '@niledatabase/server';
import { freePort, httpClient, type TestResponse } from '@platform/testing';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../../src/api.js';
import { loadApiConfig } from '../../src/config.js';
import { platform, type TestPlatform } from './platform.js';
import { createTenant, developerWithReadyDatabase } from './fixtures.js';
import { CookieJar, startSdkApp, type SdkApp } from './sdk-app.js';

export type Owner = Awaited<ReturnType<typeof developerWithReadyDatabase>>;

/** A fetch Response read as the tests' other answers are. */
export async function read(response: Response): Promise<TestResponse> {
  const text = await response.text();
  const json = (response.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : undefined;
  return { status: response.status, headers: response.headers, body: json, text };
}

export const setCookie = (response: { headers: Headers }, name: string) => response.headers.getSetCookie().find((line) => line.startsWith(`${name}=`));

/**
 * SSO through the family's surface as an app built on their server SDK does it: the SDK's route
 * handlers (unmodified, in an app on loopback) forward the browser's requests to a real API on
 * real PostgreSQL, and two tenants' providers (`corp` and `azure` for A, `bcorp` for B) are
 * clients of a real OpenID Provider.
 */
export interface FamilySsoWorld {
  p: TestPlatform;
  op: TestOpenIdProvider;
  api: RunningApi;
  APP: string;
  /** Another allowed origin: an app of the same platform that nothing serves. */
  OTHER_APP: string;
  request: ReturnType<typeof httpClient>;
  owner: Owner;
  tenantA: string;
  tenantB: string;
  /** `/v2/databases/{owner's database}` */
  base: string;
  /** What the SDK sends on every call it forwards. */
  sdkHeaders: Record<string, string>;
  /** A new account at the provider, in the providers' email domain. */
  account(name?: string): { sub: string; email: string };
  /** The browser at the app: the CSRF token, then the sign-in form posted through the SDK's route. */
  startAtApp(jar: CookieJar, provider: string): Promise<TestResponse>;
  /** The whole flow in one browser: the app, the provider's sign-in as `sub`, and back to the app's callback. */
  signInAtApp(jar: CookieJar, tenantId: string, provider: string, sub: string): Promise<{ started: TestResponse; back: URL; finished: Response }>;
  close(): Promise<void>;
}

export async function startFamilySsoWorld(): Promise<FamilySsoWorld> {
  const appPort = await freePort();
  const APP = `http://127.0.0.1:${appPort}`;
  const OTHER_APP = `http://127.0.0.1:${await freePort()}`;
  const sdkHeaders = { 'nile-origin': APP, 'nile-secure-cookies': 'false' };
  const p = await platform();
  const op = await startTestOpenIdProvider();
  const api = await startApi(
    loadApiConfig({ ...p.env, API_PORT: String(await freePort()), SSO_ALLOW_LOOPBACK_HTTP: 'true', ALLOWED_ORIGINS: `${APP},${OTHER_APP}`, TENANT_MEMBERS_CREATE_USERS: 'true' }),
  );
  const request = httpClient(api.url);

  /** Registers a provider for a tenant at the platform, and its client (the app's callback) at the OpenID Provider. */
  async function registerProvider(o: Owner, tenantId: string, provider: string) {
    const clientId = `client-${randomBytes(4).toString('hex')}`;
    const clientSecret = randomBytes(24).toString('base64url');
    op.addClient({ clientId, clientSecret, redirectUris: [`${APP}/api/auth/callback/${provider}`] });
    const created = await request('POST', `${o.D}/tenants/${tenantId}/auth/oidc/providers/${provider}`, {
      token: o.token,
      json: { configUrl: op.configUrl, clientId, clientSecret, emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso' },
    });
    expect(created.status, created.text).to.equal(200);
  }

  const owner = await developerWithReadyDatabase(p);
  const tenantA = (await createTenant(p, owner.token, owner.D)).id;
  const tenantB = (await createTenant(p, owner.token, owner.D)).id;
  await registerProvider(owner, tenantA, 'corp');
  await registerProvider(owner, tenantB, 'bcorp');
  // A name the SDK's types know (its ProviderName), for its own signIn(provider, request).
  await registerProvider(owner, tenantA, 'azure');
  const base = `/v2/databases/${owner.database.id}`;
  // The SDK as an app configures it; this app only forwards auth calls, so its SQL settings are never used.
  const nile = new Server({ apiUrl: `${api.url}${base}`, origin: APP, user: 'app', password: 'unused', databaseName: 'unused', db: { host: '127.0.0.1', port: 1, max: 1 } });
  const app: SdkApp = await startSdkApp(nile, appPort);

  const account = (name = 'Casey Corp') => {
    const sub = `sub-${randomBytes(4).toString('hex')}`;
    op.addAccount({ sub, email: `${sub}@corp.test`, name });
    return { sub, email: `${sub}@corp.test` };
  };

  async function startAtApp(jar: CookieJar, provider: string) {
    const csrf = await fetch(`${APP}/api/auth/csrf`, { headers: { cookie: jar.header() } });
    expect(csrf.status).to.equal(200);
    jar.take(csrf);
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const started = await read(
      await fetch(`${APP}/api/auth/signin/${provider}`, {
        method: 'POST',
        headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrfToken, callbackUrl: `${APP}/dashboard`, json: 'true' }).toString(),
      }),
    );
    jar.take(started);
    return started;
  }

  async function signInAtApp(jar: CookieJar, tenantId: string, provider: string, sub: string) {
    jar.set('nile.tenant-id', tenantId);
    const started = await startAtApp(jar, provider);
    expect(started.status, started.text).to.equal(200);
    const back = await op.signIn(started.body.url, sub);
    const finished = await fetch(back, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(finished);
    return { started, back, finished };
  }

  async function close() {
    await app.close();
    await api.close();
    await op.close();
  }

  return { p, op, api, APP, OTHER_APP, request, owner, tenantA, tenantB, base, sdkHeaders, account, startAtApp, signInAtApp, close };
}

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { freePort, httpClient } from '@platform/testing';
import { hiddenFields, startTestOpenIdProvider, type TestOpenIdProvider } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../../src/api.js';
import { loadApiConfig } from '../../src/config.js';
import { TEST_AUDIENCE, type TestPlatform } from './platform.js';

export interface SsoPlatform {
  /** An API on the shared control plane that may reach providers on loopback over http (SSO_ALLOW_LOOPBACK_HTTP). */
  api: RunningApi;
  request: ReturnType<typeof httpClient>;
  op: TestOpenIdProvider;
  close(): Promise<void>;
}

/** A second API replica with the development setting on, and a real OpenID Provider on loopback. */
export async function startSsoPlatform(p: TestPlatform): Promise<SsoPlatform> {
  const op = await startTestOpenIdProvider();
  const api = await startApi(loadApiConfig({ ...p.env, API_PORT: String(await freePort()), SSO_ALLOW_LOOPBACK_HTTP: 'true' }));
  return {
    api,
    op,
    request: httpClient(api.url),
    async close() {
      await api.close();
      await op.close();
    },
  };
}

/**
 * The URL a browser would follow, on the API under test: the platform's public base URL
 * (http://api.test) names the API in login and callback URLs; tests reach it on loopback.
 */
export function onApi(api: RunningApi, publicUrl: string | URL): string {
  const url = new URL(publicUrl);
  expect(url.origin).to.equal(TEST_AUDIENCE);
  return `${api.url}${url.pathname}${url.search}`;
}

/** The callback URL a tenant's provider must accept. */
export function callbackUrlOf(T: string): string {
  return `${TEST_AUDIENCE}${T}/auth/oidc/callback`;
}

export interface TestRegistration {
  provider: string;
  clientId: string;
  clientSecret: string;
}

/** Registers a client for the tenant's callback at the provider, and the provider for the tenant (200). */
export async function registerProvider(
  sso: SsoPlatform,
  token: string,
  T: string,
  body: Record<string, unknown> = {},
  provider = `idp-${randomBytes(3).toString('hex')}`,
): Promise<TestRegistration & { body: Record<string, unknown> }> {
  const clientId = `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  sso.op.addClient({ clientId, clientSecret, redirectUris: [callbackUrlOf(T)] });
  const created = await sso.request('POST', `${T}/auth/oidc/providers/${provider}`, {
    token,
    json: { configUrl: sso.op.configUrl, clientId, clientSecret, emailDomains: ['corp.test'], redirectURI: 'https://app.test/sso', ...body },
  });
  expect(created.status, created.text).to.equal(200);
  return { provider, clientId, clientSecret, body: created.body };
}

export interface Callback {
  status: number;
  html: string;
  headers: Headers;
  /** The hidden fields of the page's form. */
  fields: Record<string, string>;
  /** The callback URL the provider sent the browser to (on the API under test). */
  url: string;
  /** The browser cookie that bound the sign-in. */
  loginCookie: string;
}

/**
 * Starts a sign-in (GET .../login) or, with `link`, a link of the signed-in user holding `cookie`
 * (POST .../link from the platform's own origin); answers the provider's authorization URL and
 * the cookie that binds the sign-in to this "browser".
 */
export async function startLogin(sso: SsoPlatform, T: string, provider: string, options: { cookie?: string; link?: boolean } = {}) {
  const base = `${sso.api.url}${T}/auth/oidc/providers/${provider}`;
  const response = options.link
    ? await fetch(`${base}/link`, { method: 'POST', redirect: 'manual', headers: { origin: TEST_AUDIENCE, ...(options.cookie ? { cookie: options.cookie } : {}) } })
    : await fetch(`${base}/login`, { redirect: 'manual', headers: options.cookie ? { cookie: options.cookie } : {} });
  expect(response.status, await response.clone().text()).to.equal(options.link ? 303 : 302);
  const loginCookie = response.headers.getSetCookie()[0].split(';')[0];
  return { location: new URL(response.headers.get('location')!), loginCookie, setCookie: response.headers.getSetCookie()[0] };
}

/** GETs a callback URL as a browser holding `cookie` would. */
export async function visitCallback(url: string, cookie: string | undefined) {
  const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  const html = await response.text();
  return { status: response.status, html, headers: response.headers, fields: hiddenFields(html) };
}

/** The whole flow over HTTP: login, the provider's sign-in as `sub`, the callback. */
export async function signInWithProvider(sso: SsoPlatform, T: string, provider: string, sub: string, options: { cookie?: string; link?: boolean } = {}): Promise<Callback> {
  const start = await startLogin(sso, T, provider, options);
  const back = await sso.op.signIn(start.location.href, sub);
  const url = onApi(sso.api, back);
  const cookie = [start.loginCookie, options.cookie].filter(Boolean).join('; ');
  return { ...(await visitCallback(url, cookie)), url, loginCookie: start.loginCookie };
}

/** The error code an HTML failure page shows. */
export function pageErrorCode(html: string): string | undefined {
  return /<code id="error-code">([^<]*)<\/code>/.exec(html)?.[1];
}

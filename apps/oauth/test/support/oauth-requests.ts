import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import type { httpClient, TestResponse } from '@platform/testing';
import { developerWithWorkspace, expectApiError, signInAt, signUpDeveloper } from '@platform/test-fixtures';
import { platform } from './platform.js';

// What a client (honest or not) sends the shared token service, and what the tests expect back.

export const CLI = 'platform-cli';
export const CALLBACK = 'http://127.0.0.1:53682/callback';
/** The API refuses a revoked family's access tokens within this (poll interval 200 ms). */
export const REVOCATION_BOUND_MS = 3_000;

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizationUrl(issuer: string, params: Record<string, string | undefined>): string {
  const url = new URL('/oauth2/authorize', issuer);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

export function basic(id: string, secret: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}` };
}

/** A code for `credentials`, got through the sign-in page as a browser would. */
export async function obtainCode(
  credentials: { email: string; password: string },
  options: { issuer?: string; clientId?: string; redirectUri?: string; scope?: string } = {},
) {
  const issuer = options.issuer ?? (await platform()).issuer;
  const redirectUri = options.redirectUri ?? CALLBACK;
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const signedIn = await signInAt(
    authorizationUrl(issuer, {
      response_type: 'code',
      client_id: options.clientId ?? CLI,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: options.scope,
      state,
    }),
    credentials,
  );
  expect(signedIn.status, signedIn.html.slice(0, 500)).to.equal(303);
  const back = new URL(signedIn.location!);
  expect(back.origin + back.pathname).to.equal(redirectUri);
  expect(back.searchParams.get('state')).to.equal(state);
  const code = back.searchParams.get('code');
  expect(code, signedIn.location!).to.be.a('string');
  return { code: code as string, verifier, redirectUri };
}

/** POST `path` as a form, to `oauth` or else the shared token service. */
export async function formRequest(path: string, fields: Record<string, string>, headers: Record<string, string> = {}, oauth?: ReturnType<typeof httpClient>) {
  const send = oauth ?? (await platform()).oauth;
  return send('POST', path, { raw: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded', headers });
}

export function tokenRequest(fields: Record<string, string>, headers: Record<string, string> = {}, oauth?: ReturnType<typeof httpClient>) {
  return formRequest('/oauth2/token', fields, headers, oauth);
}

export function redeem(grant: { code: string; verifier: string; redirectUri: string }, clientId = CLI, oauth?: ReturnType<typeof httpClient>) {
  return tokenRequest({ grant_type: 'authorization_code', client_id: clientId, code: grant.code, code_verifier: grant.verifier, redirect_uri: grant.redirectUri }, {}, oauth);
}

export function refresh(refreshToken: string, clientId = CLI, extra: Record<string, string> = {}) {
  return tokenRequest({ grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken, ...extra });
}

/** RFC 6749 section 5.2, exactly: the status, `{error, error_description}` and no-store. */
export function expectOAuthError(response: TestResponse, status: number, error: string, what = '') {
  expect(response.status, `${what} ${response.text}`).to.equal(status);
  expect(response.body, what).to.be.an('object').that.has.all.keys('error', 'error_description');
  expect(response.body.error, what).to.equal(error);
  expect(response.body.error_description, what).to.be.a('string');
  expect(response.headers.get('cache-control'), what).to.equal('no-store');
}

export function expectTokens(response: TestResponse, what = '') {
  expect(response.status, `${what} ${response.text}`).to.equal(200);
  expect(response.body.access_token, what).to.be.a('string');
  expect(response.body.refresh_token, what).to.be.a('string');
  return response.body as { access_token: string; refresh_token: string; scope: string };
}

/** A fresh developer's first token pair from the CLI client. */
export async function signedInTokens(scope?: string) {
  const credentials = await signUpDeveloper((await platform()).issuer);
  return expectTokens(await redeem(await obtainCode(credentials, { scope })), 'first redemption');
}

export async function expectAccepted(accessToken: string) {
  const response = await (await platform()).request('GET', '/workspaces', { token: accessToken });
  expect(response.status, response.text).to.equal(200);
}

/** Polls the trusting API until it refuses the token, failing past the revocation bound. */
export async function expectRefusedWithinBound(accessToken: string) {
  const p = await platform();
  const started = Date.now();
  for (;;) {
    const response = await p.request('GET', '/workspaces', { token: accessToken });
    if (response.status === 401) {
      expectApiError(response, 401, 'invalid_token');
      return Date.now() - started;
    }
    expect(response.status, response.text).to.equal(200);
    expect(Date.now() - started, 'the API refuses the revoked family within the poll bound').to.be.below(REVOCATION_BOUND_MS);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A workspace of its own with another public client (loopback) and a confidential one. */
export async function otherClients() {
  const p = await platform();
  const owner = await developerWithWorkspace(p);
  const register = async (body: object) => {
    const created = await p.request('POST', `/workspaces/${owner.slug}/oauth-clients`, { token: owner.token, json: body });
    expect(created.status, created.text).to.equal(201);
    return created.body as { client_id: string; client_secret?: string };
  };
  const publicClient = await register({ name: 'Other CLI', type: 'public', redirect_uris: ['http://127.0.0.1/callback'] });
  const confidential = await register({ name: 'Web app', type: 'confidential', redirect_uris: ['https://client.example/callback'] });
  return { publicId: publicClient.client_id, confidentialId: confidential.client_id, secret: confidential.client_secret as string };
}

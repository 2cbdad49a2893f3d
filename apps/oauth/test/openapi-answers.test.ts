import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { ScryptPasswordHasher, Sha256ClientSecrets } from '@platform/auth';
import { API_SCOPES, createWorkspace, registerClient, type DeveloperPrincipal } from '@platform/domain';
import { openRepositories } from '@platform/persistence';
import { createTestControlPlane, hiddenFields, type TestControlPlane } from '@platform/test-fixtures';
import { freePort, startTestPostgres, type TestPostgres } from '@platform/testing';
import { loadOAuthConfig } from '../src/config.js';
import { startTokenService, type RunningTokenService } from '../src/oauth.js';

/**
 * Every answer of the token service, HTML pages included, given by a real token service (in this
 * process, checking its own answers) over a real PostgreSQL, and each one found in the
 * /openapi.json it serves: (method, path, status, media type).
 */
describe('the token service answers only what its OpenAPI document declares', function () {
  this.timeout(60_000);
  const CLI = 'platform-cli';
  const CALLBACK = 'http://127.0.0.1:53682/callback';
  const TOO_MANY_SIGN_INS = 'Too many failed attempts; try again in 15 minutes.';

  interface Answer {
    status: number;
    headers: Headers;
    text: string;
    json: any;
  }

  let postgres: TestPostgres;
  let controlPlane: TestControlPlane;
  let service: RunningTokenService;
  let issuer: string;
  let document: any;
  /** The answers (method, path, status) the current test gave; each test checks it gave (at least) all it names. */
  const answered = new Set<string>();
  beforeEach(() => answered.clear());
  function expectAnswered(expected: string[]): void {
    expect([...answered]).to.include.members(expected);
  }
  /** A developer with a password, made in the control plane directly: sign-ups from this address are counted. */
  const ada = { email: `ada-${randomBytes(4).toString('hex')}@example.test`, password: 'correct horse battery' };

  before(async function () {
    postgres = await startTestPostgres();
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    controlPlane = await createTestControlPlane(postgres, { issuer, audience: 'http://api.test' });
    service = await startTokenService(
      loadOAuthConfig({
        ...controlPlane.env,
        OAUTH_HOST: '127.0.0.1',
        OAUTH_PORT: String(port),
        OAUTH_ISSUER: issuer,
        PUBLIC_BASE_URL: 'http://api.test',
        LOG_LEVEL: 'silent',
        PASSWORD_HASH_LOGN: '10',
        VALIDATE_RESPONSES: 'true',
        // Two wrong passwords for one email from this address, then 429; four sign-ups from it, then 429,
        // each for 15 minutes.
        LOGIN_DELAY_AFTER_FAILURES: '2',
        LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '4',
        LOGIN_DELAY_FIRST: '900',
      }),
    );
    document = await (await fetch(`${issuer}/openapi.json`)).json();
    const passwordHash = await new ScryptPasswordHasher(10).hash(ada.password);
    await openRepositories(controlPlane.orm).developers.createWithPassword({ email: ada.email, name: 'Ada', passwordHash });
  });

  after(async function () {
    await service?.close();
    await controlPlane?.close();
    await postgres?.stop();
  });

  /** Sends a request as a browser or a client would (no redirects followed) and checks the document declares its answer. */
  async function answer(method: string, path: string, init: { query?: Record<string, string>; form?: Record<string, string>; cookie?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {}): Promise<Answer> {
    const url = new URL(path, issuer);
    for (const [name, value] of Object.entries(init.query ?? {})) url.searchParams.set(name, value);
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...(init.cookie ? { cookie: init.cookie } : {}),
        ...init.headers,
      },
      body: init.form ? new URLSearchParams(init.form).toString() : init.body,
    });
    const text = await response.text();
    const mediaType = response.headers.get('content-type')?.split(';')[0].trim() ?? null;
    const operation = document.paths[path]?.[method.toLowerCase()];
    const what = `${method} ${path} ${response.status} ${mediaType ?? 'without a body'}`;
    expect(operation, what).to.be.an('object');
    const declared = operation.responses[String(response.status)];
    expect(declared, `${what}: ${text.slice(0, 300)}`).to.be.an('object');
    if (mediaType === null) {
      expect(text, what).to.equal('');
      expect(declared.content, what).to.equal(undefined);
    } else {
      expect(Object.keys(declared.content ?? {}), what).to.include(mediaType);
    }
    answered.add(`${method} ${path} ${response.status}`);
    return { status: response.status, headers: response.headers, text, json: mediaType?.endsWith('json') && text ? JSON.parse(text) : undefined };
  }

  function pkce() {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  }

  function authorizationRequest(challenge: string, overrides: Record<string, string> = {}): Record<string, string> {
    // In the order the sign-up page carries them back.
    return { client_id: CLI, redirect_uri: CALLBACK, response_type: 'code', state: 'st', code_challenge: challenge, code_challenge_method: 'S256', ...overrides };
  }

  function basic(id: string, secret: string): Record<string, string> {
    return { authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}` };
  }

  function expectPage(page: Answer, status: number, text: string) {
    expect(page.status, page.text.slice(0, 300)).to.equal(status);
    expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(page.text).to.include(text);
  }

  function expectOAuthError(response: Answer, status: number, error: string, description: string) {
    expect(response.status, response.text).to.equal(status);
    expect(response.json).to.deep.equal({ error, error_description: description });
    expect(response.headers.get('cache-control')).to.equal('no-store');
  }

  /** The sign-in page's form, its cookie and what it posts, for a fresh authorization request. */
  async function signInForm(overrides: Record<string, string> = {}) {
    const { verifier, challenge } = pkce();
    const page = await answer('GET', '/oauth2/authorize', { query: authorizationRequest(challenge, overrides) });
    expectPage(page, 200, 'Sign in');
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
    return { verifier, cookie, fields: hiddenFields(page.text) };
  }

  /** A developer's account made through the sign-up form: one of the four sign-ups this address may make. */
  async function signUp(email: string, password: string, returnQuery = '') {
    const page = await answer('GET', '/signup', { query: Object.fromEntries(new URLSearchParams(returnQuery)) });
    expectPage(page, 200, 'Create a developer account');
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
    return answer('POST', '/signup', { form: { ...hiddenFields(page.text), email, password, name: 'Ada' }, cookie });
  }


  it('health, keys and metadata: JSON', async function () {
    expect((await answer('GET', '/healthz')).json).to.deep.equal({ status: 'ok' });
    expect((await answer('GET', '/readyz')).json).to.deep.equal({ status: 'ok' });
    const jwks = await answer('GET', '/.well-known/jwks.json');
    expect(jwks.status).to.equal(200);
    expect(jwks.json.keys.map((key: { kid: string }) => key.kid)).to.include((await controlPlane.keys.signingKey()).kid);
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const metadata = await answer('GET', path);
      expect(metadata.status, path).to.equal(200);
      expect(metadata.json, path).to.include({ issuer, token_endpoint: `${issuer}/oauth2/token`, jwks_uri: `${issuer}/.well-known/jwks.json` });
    }
    expectAnswered(['GET /healthz 200', 'GET /readyz 200', 'GET /.well-known/jwks.json 200', 'GET /.well-known/oauth-authorization-server 200', 'GET /.well-known/openid-configuration 200']);
  });

  it('GET /oauth2/authorize: the sign-in page (200), an error page (400), or back to the client (303)', async function () {
    const { challenge } = pkce();
    const page = await answer('GET', '/oauth2/authorize', { query: authorizationRequest(challenge) });
    expectPage(page, 200, '<strong>Platform command line</strong> asks to act for you');
    expect(page.headers.get('content-security-policy')).to.equal(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http://127.0.0.1:53682; frame-ancestors 'none'; base-uri 'none'",
    );
    expectPage(await answer('GET', '/oauth2/authorize', { query: authorizationRequest(challenge, { client_id: 'cli_nobody' }) }), 400, 'The application that sent you here is not registered.');
    const back = await answer('GET', '/oauth2/authorize', { query: authorizationRequest(challenge, { response_type: 'token' }) });
    expect(back.status).to.equal(303);
    expect(back.headers.get('location')).to.equal(
      `${CALLBACK}?error=unsupported_response_type&error_description=Only+response_type+%27code%27+is+supported&state=st&iss=${encodeURIComponent(issuer)}`,
    );
    expect(back.text).to.equal('');
    expectAnswered([...[200, 400, 303].map((status) => `GET /oauth2/authorize ${status}`)]);
  });

  it('GET and POST /signup: the page, then 303 back to sign-in, a confirmation (200), 400, 409, 403 and 429', async function () {
    const { challenge } = pkce();
    const returnQuery = new URLSearchParams(authorizationRequest(challenge)).toString();
    const made = await signUp(`bo-${ada.email}`, ada.password, returnQuery);
    expect(made.status, made.text.slice(0, 300)).to.equal(303);
    expect(made.headers.get('location')).to.equal(`/oauth2/authorize?${returnQuery}&signed_up=1`);
    expectPage(await signUp(`cy-${ada.email}`, ada.password), 200, 'Your account is ready.');
    expectPage(await signUp(`dy-${ada.email}`, 'short'), 400, 'Password must be 8 to 256 characters');
    expectPage(await signUp(ada.email.toUpperCase(), ada.password), 409, 'An account with this email already exists; sign in instead');
    const noCookie = await answer('POST', '/signup', { form: { csrf: randomBytes(32).toString('base64url'), email: `ed-${ada.email}`, password: ada.password } });
    expectPage(noCookie, 403, 'The form expired; please try again.');
    expectPage(await signUp(`fy-${ada.email}`, ada.password), 429, 'Too many sign-ups from here; try again in 15 minutes.');
    expectAnswered(['GET /signup 200', ...[200, 303, 400, 403, 409, 429].map((status) => `POST /signup ${status}`)]);
  });

  it('POST /oauth2/authorize: 303 with a code or access_denied, 400, 401, 403, 429, and the framework’s 400 and 413', async function () {
    const signedIn = await signInForm();
    const back = await answer('POST', '/oauth2/authorize', { form: { ...signedIn.fields, ...ada }, cookie: signedIn.cookie });
    expect(back.status, back.text.slice(0, 300)).to.equal(303);
    expect(new URL(back.headers.get('location') ?? '').searchParams.get('code')).to.match(/^[A-Za-z0-9_-]{43}$/);

    const stranger = await workspaceClient();
    const denied = await signInForm({ client_id: stranger.clientId, redirect_uri: 'https://client.example/callback' });
    const refused = await answer('POST', '/oauth2/authorize', { form: { ...denied.fields, ...ada }, cookie: denied.cookie });
    expect(refused.status).to.equal(303);
    expect(new URL(refused.headers.get('location') ?? '').searchParams.get('error')).to.equal('access_denied');

    const form = await signInForm();
    const unregistered = { ...form.fields, ...ada, redirect_uri: `${CALLBACK}/` };
    expectPage(await answer('POST', '/oauth2/authorize', { form: unregistered, cookie: form.cookie }), 400, 'The redirect_uri is not one the application registered.');
    expectPage(await answer('POST', '/oauth2/authorize', { form: { ...form.fields, ...ada } }), 403, 'The form expired; please sign in again.');
    const wrong = { ...form.fields, email: `nobody-${ada.email}`, password: 'not the password' };
    expectPage(await answer('POST', '/oauth2/authorize', { form: wrong, cookie: form.cookie }), 401, 'Email or password is incorrect.');
    expectPage(await answer('POST', '/oauth2/authorize', { form: wrong, cookie: form.cookie }), 401, 'Email or password is incorrect.');
    expectPage(await answer('POST', '/oauth2/authorize', { form: wrong, cookie: form.cookie }), 429, TOO_MANY_SIGN_INS);

    const mismatched = await answer('POST', '/oauth2/authorize', {
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' },
      body: 'email=x',
    });
    expect(mismatched.status).to.equal(400);
    expect(mismatched.json).to.deep.equal({ errorCode: 'malformed_body', message: 'The request body does not match its Content-Encoding', statusCode: 400 });
    const huge = await answer('POST', '/oauth2/authorize', {
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' },
      body: gzipSync(`email=${'x'.repeat(20_000)}`),
    });
    expect(huge.status).to.equal(413);
    expect(huge.json).to.deep.equal({ errorCode: 'payload_too_large', message: 'The request body is too large', statusCode: 413 });
    expectAnswered([...[303, 400, 401, 403, 413, 429].map((status) => `POST /oauth2/authorize ${status}`)]);
  });

  it('POST /oauth2/token: tokens (200), RFC 6749 errors (400, 401 with a Basic challenge)', async function () {
    const form = await signInForm();
    const back = await answer('POST', '/oauth2/authorize', { form: { ...form.fields, ...ada }, cookie: form.cookie });
    const code = new URL(back.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const redeemed = await answer('POST', '/oauth2/token', {
      form: { grant_type: 'authorization_code', client_id: CLI, code, code_verifier: form.verifier, redirect_uri: CALLBACK },
    });
    expect(redeemed.status, redeemed.text).to.equal(200);
    expect(redeemed.json).to.have.all.keys('access_token', 'token_type', 'expires_in', 'scope', 'refresh_token');
    expect(redeemed.json).to.include({ token_type: 'Bearer', expires_in: 3600, scope: 'api:read api:write' });

    const client = await workspaceClient();
    const own = await answer('POST', '/oauth2/token', { form: { grant_type: 'client_credentials', scope: 'api:read' }, headers: basic(client.clientId, client.secret) });
    expect(own.status, own.text).to.equal(200);
    expect(own.json).to.have.all.keys('access_token', 'token_type', 'expires_in', 'scope');

    expectOAuthError(await answer('POST', '/oauth2/token', { form: { grant_type: 'password', client_id: CLI } }), 400, 'unsupported_grant_type', "grant_type 'password' is not supported");
    const wrongSecret = await answer('POST', '/oauth2/token', { form: { grant_type: 'client_credentials' }, headers: basic(client.clientId, 'wrong') });
    expectOAuthError(wrongSecret, 401, 'invalid_client', 'Client authentication failed');
    expect(wrongSecret.headers.get('www-authenticate')).to.equal('Basic realm="token"');
    expectAnswered([...[200, 400, 401].map((status) => `POST /oauth2/token ${status}`)]);
  });

  it('POST /oauth2/revoke and /oauth2/introspect: 200, 400 and 401', async function () {
    const client = await workspaceClient();
    const { json: issued } = await answer('POST', '/oauth2/token', { form: { grant_type: 'client_credentials' }, headers: basic(client.clientId, client.secret) });

    const introspected = await answer('POST', '/oauth2/introspect', { form: { token: issued.access_token }, headers: basic(client.clientId, client.secret) });
    expect(introspected.status).to.equal(200);
    expect(introspected.json).to.include({ active: true, token_type: 'Bearer', client_id: client.clientId, scope: 'api:read api:write' });
    expectOAuthError(await answer('POST', '/oauth2/introspect', { form: {}, headers: basic(client.clientId, client.secret) }), 400, 'invalid_request', "'token' is required");
    expectOAuthError(await answer('POST', '/oauth2/introspect', { form: { token: 'x', client_id: CLI } }), 401, 'invalid_client', 'Only confidential clients may introspect tokens');

    const revoked = await answer('POST', '/oauth2/revoke', { form: { token: issued.access_token }, headers: basic(client.clientId, client.secret) });
    expect(revoked.status).to.equal(200);
    expect(revoked.text).to.equal('');
    expect(revoked.headers.get('cache-control')).to.equal('no-store');
    expectOAuthError(await answer('POST', '/oauth2/revoke', { form: { client_id: CLI } }), 400, 'invalid_request', "'token' is required");
    expectOAuthError(await answer('POST', '/oauth2/revoke', { form: { token: 'x' } }), 401, 'invalid_client', 'Client authentication is required');
    expectAnswered([...[200, 400, 401].map((status) => `POST /oauth2/revoke ${status}`), ...[200, 400, 401].map((status) => `POST /oauth2/introspect ${status}`)]);
  });


  /** A confidential client of a workspace Ada is no member of. */
  async function workspaceClient(): Promise<{ clientId: string; secret: string }> {
    const owner = await controlPlane.newDeveloper();
    const caller: DeveloperPrincipal = { kind: 'developer', developerId: owner.id, scopes: API_SCOPES };
    const deps = { ...openRepositories(controlPlane.orm), secrets: new Sha256ClientSecrets() };
    const workspace = await createWorkspace(deps, caller, { name: `Stranger ${randomBytes(3).toString('hex')}` });
    const { client, secret } = await registerClient(deps, caller, workspace.slug, { name: 'Web app', type: 'confidential', redirectUris: ['https://client.example/callback'] });
    return { clientId: client.id, secret: secret ?? '' };
  }
});

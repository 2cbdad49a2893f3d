import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { pino } from 'pino';
import { ConfigError } from '@platform/config';
import { parseKeyRing, SecretBox, Sha256ClientSecrets } from '@platform/auth';
import { API_SCOPES, bootstrapDeveloper, registerClient } from '@platform/domain';
import { openRepositories } from '@platform/persistence';
import { createTestControlPlane, type TestControlPlane } from '@platform/test-fixtures';
import { freePort, query, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { loadOAuthConfig } from '../src/config.js';
import { startTokenService } from '../src/oauth.js';
import { basic } from './support/oauth-requests.js';

const AUDIENCE = 'http://api.test';
const ringKey = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

interface Row {
  kid: string;
  public_jwk: Record<string, unknown>;
  private_jwk: Record<string, unknown> | null;
  sealed_private_jwk: string | null;
}

/**
 * Signing keys at rest (issue 24): the token service over a real control plane, which is read
 * here directly, as someone with a copy of it but not of SIGNING_KEY_SECRET_KEYS would read it.
 */
describe('signing keys sealed at rest', function () {
  this.timeout(60_000);
  let postgres: TestPostgres;
  let cp: TestControlPlane;
  let running: { close(): Promise<void> } | undefined;
  /** One port per test: a restart keeps the issuer, whose tokens must still verify. */
  let port: number;

  before(async function () {
    postgres = await startTestPostgres();
  });

  beforeEach(async function () {
    cp = await createTestControlPlane(postgres, { issuer: 'http://unused.test', audience: AUDIENCE });
    port = await freePort();
  });

  afterEach(async function () {
    await running?.close();
    running = undefined;
    await cp.close();
  });

  after(async function () {
    await postgres?.stop();
  });

  const rows = () => query<Row>(cp.url, 'select kid, public_jwk, private_jwk, sealed_private_jwk from signing_keys order by created');
  const sealingKeys = async () => (await rows()).map((row) => row.sealed_private_jwk?.split('.')[1] ?? 'plain');

  /** What a reader of the table alone gets: nothing that signs. */
  async function expectNoPrivateMaterial(): Promise<void> {
    const table = await rows();
    expect(table).not.to.have.length(0);
    const text = JSON.stringify(await query(cp.url, 'select * from signing_keys'));
    expect(text).not.to.include('"d":');
    expect(text).not.to.include('PRIVATE KEY');
    for (const row of table) {
      expect(row.private_jwk, row.kid).to.equal(null);
      expect(row.sealed_private_jwk, row.kid).to.match(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(row.public_jwk).not.to.have.property('d');
    }
  }

  /** The token service on this control plane with `ring` as SIGNING_KEY_SECRET_KEYS; its log lines are collected. */
  async function startWith(ring: string) {
    const log: { msg: string; level: number; [field: string]: unknown }[] = [];
    const issuer = `http://127.0.0.1:${port}`;
    const config = loadOAuthConfig({
      ...cp.env,
      SIGNING_KEY_SECRET_KEYS: ring,
      OAUTH_HOST: '127.0.0.1',
      OAUTH_PORT: String(port),
      OAUTH_ISSUER: issuer,
      PUBLIC_BASE_URL: AUDIENCE,
      VALIDATE_RESPONSES: 'true',
    });
    const logger = pino({ level: 'info' }, { write: (line: string) => void log.push(JSON.parse(line)) });
    running = await startTokenService(config, { logger });
    return { issuer, log };
  }

  async function stop() {
    await running?.close();
    running = undefined;
  }

  /** A confidential client of a new workspace, made in the control plane as `npm start` makes its own. */
  async function client() {
    const repos = openRepositories(cp.orm);
    const slug = `ws-${randomBytes(4).toString('hex')}`;
    const { developer } = await bootstrapDeveloper(repos, { email: `${slug}@example.test`, name: null, workspaceName: slug, workspaceSlug: slug });
    const registered = await registerClient({ ...repos, secrets: new Sha256ClientSecrets() }, { kind: 'developer', developerId: developer.id, scopes: API_SCOPES }, slug, {
      name: 'Keys at rest',
      type: 'confidential',
      redirectUris: [],
    });
    return { id: registered.client.id, secret: registered.secret as string };
  }

  async function clientToken(issuer: string, credentials: { id: string; secret: string }): Promise<string> {
    const answer = await fetch(`${issuer}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...basic(credentials.id, credentials.secret) },
      body: 'grant_type=client_credentials',
    });
    const body = (await answer.json()) as { access_token: string };
    expect(answer.status, JSON.stringify(body)).to.equal(200);
    return body.access_token;
  }

  /** Verifies as any resource server would: against the published JWKS. */
  async function verifies(issuer: string, token: string): Promise<boolean> {
    const jwks = (await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
    return jwtVerify(token, createLocalJWKSet(jwks), { issuer, audience: AUDIENCE }).then(
      () => true,
      () => false,
    );
  }

  it('keeps no private key readable in the control plane, and tokens signed before a restart verify after it', async function () {
    const credentials = await client();
    let service = await startWith(cp.signingKeySecretKeys);
    await expectNoPrivateMaterial();
    const before = await clientToken(service.issuer, credentials);
    expect(await verifies(service.issuer, before)).to.equal(true);

    await stop();
    service = await startWith(cp.signingKeySecretKeys);
    const after = await clientToken(service.issuer, credentials);
    expect(decodeProtectedHeader(after).kid).to.equal(decodeProtectedHeader(before).kid);
    expect(await verifies(service.issuer, before)).to.equal(true);
    expect(await verifies(service.issuer, after)).to.equal(true);
    await expectNoPrivateMaterial();
    // Nothing was sealed again: the ring did not change.
    expect(service.log.filter((line) => line.msg === 'signing keys sealed with the first key of the ring')).to.deep.equal([]);
  });

  it('rotates the ring: the new key second changes nothing, first re-seals every key at start-up (logged), and then the old key can go', async function () {
    const credentials = await client();
    await cp.keys.rotate({ maxTokenSeconds: 3600 });
    expect(await sealingKeys()).to.deep.equal(['test1', 'test1']);
    const next = ringKey('next');

    let service = await startWith(`${cp.signingKeySecretKeys},${next}`);
    expect(await sealingKeys()).to.deep.equal(['test1', 'test1']);
    const signedUnderOld = await clientToken(service.issuer, credentials);
    await stop();

    service = await startWith(`${next},${cp.signingKeySecretKeys}`);
    expect(await sealingKeys()).to.deep.equal(['next', 'next']);
    expect(service.log.find((line) => line.msg === 'signing keys sealed with the first key of the ring')).to.deep.include({ sealed: 0, resealed: 2, unreadable: 0 });
    await stop();

    service = await startWith(next);
    expect(await verifies(service.issuer, signedUnderOld)).to.equal(true);
    expect(await verifies(service.issuer, await clientToken(service.issuer, credentials))).to.equal(true);
    await expectNoPrivateMaterial();
  });

  it('seals at start-up the plain private keys a release from before sealing left, logging how many, and signs on with them', async function () {
    const credentials = await client();
    // The control plane as the previous release left it: the private JWK in plain text.
    const [row] = await rows();
    const plain = JSON.parse(new SecretBox(parseKeyRing(cp.signingKeySecretKeys)).open(row.sealed_private_jwk as string, `signing-key:${row.kid}`)) as Record<string, unknown>;
    await query(cp.url, 'update signing_keys set private_jwk = $1, sealed_private_jwk = null where kid = $2', [JSON.stringify(plain), row.kid]);
    expect(JSON.stringify(await rows())).to.include('"d":');

    const service = await startWith(cp.signingKeySecretKeys);
    expect(service.log.find((line) => line.msg === 'signing keys sealed with the first key of the ring')).to.deep.include({ sealed: 1, resealed: 0, unreadable: 0 });
    await expectNoPrivateMaterial();
    expect(JSON.stringify(await rows())).not.to.include(String(plain.d));
    const token = await clientToken(service.issuer, credentials);
    expect(decodeProtectedHeader(token).kid).to.equal(row.kid);
    expect(await verifies(service.issuer, token)).to.equal(true);
  });

  it('refuses to start, naming SIGNING_KEY_SECRET_KEYS, with a ring that cannot open the key in use, and changes nothing', async function () {
    const before = await rows();
    const error = await rejection(startWith(ringKey('test1')));
    expect(error).to.be.instanceOf(ConfigError);
    expect(error.message).to.match(/^SIGNING_KEY_SECRET_KEYS: cannot open the signing key in use \(.+\): give every replica the ring/);
    expect(error.message).not.to.include(cp.signingKeySecretKeys.split(':')[1]);
    expect(await rows()).to.deep.equal(before);
  });
});

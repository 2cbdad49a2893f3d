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
  /** Replicas of the token service besides `running`, stopped after each test. */
  const replicas: { close(): Promise<void> }[] = [];
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
    await Promise.all(replicas.splice(0).map((replica) => replica.close()));
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

  /** A replica of the token service on this control plane and `onPort`, with `ring` as SIGNING_KEY_SECRET_KEYS; its log lines are collected. */
  async function startReplica(ring: string, onPort: number) {
    const log: { msg: string; level: number; [field: string]: unknown }[] = [];
    const issuer = `http://127.0.0.1:${onPort}`;
    const config = loadOAuthConfig({
      ...cp.env,
      SIGNING_KEY_SECRET_KEYS: ring,
      OAUTH_HOST: '127.0.0.1',
      OAUTH_PORT: String(onPort),
      OAUTH_ISSUER: issuer,
      PUBLIC_BASE_URL: AUDIENCE,
      VALIDATE_RESPONSES: 'true',
    });
    const logger = pino({ level: 'info' }, { write: (line: string) => void log.push(JSON.parse(line)) });
    const service = await startTokenService(config, { logger });
    return { issuer, log, service };
  }

  /** The token service on this test's port. */
  async function startWith(ring: string) {
    const { issuer, log, service } = await startReplica(ring, port);
    running = service;
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

  /** The control plane as the previous release left it: every private JWK in plain text, made an hour ago. */
  async function unsealAll(): Promise<Map<string, Record<string, unknown>>> {
    await query(cp.url, `update signing_keys set created = created - interval '1 hour'`);
    const box = new SecretBox(parseKeyRing(cp.signingKeySecretKeys));
    const plain = new Map<string, Record<string, unknown>>();
    for (const row of await rows()) {
      const jwk = JSON.parse(box.open(row.sealed_private_jwk as string, `signing-key:${row.kid}`)) as Record<string, unknown>;
      await query(cp.url, 'update signing_keys set private_jwk = $1, sealed_private_jwk = null where kid = $2', [JSON.stringify(jwk), row.kid]);
      plain.set(row.kid, jwk);
    }
    expect(JSON.stringify(await rows())).to.include('"d":');
    return plain;
  }

  const retirementMessage = 'signing keys once kept in plain text retire: a new key signs after the publish delay, and they verify until their tokens expire';

  it('seals at start-up the plain private keys a release from before sealing left, and rotates them out: a new key signs after the publish delay, the old one verifies on', async function () {
    const credentials = await client();
    const [old] = await rows();
    const plain = await unsealAll();

    const service = await startWith(cp.signingKeySecretKeys);
    expect(service.log.find((line) => line.msg === 'signing keys sealed with the first key of the ring')).to.deep.include({ sealed: 1, resealed: 0, unreadable: 0 });
    await expectNoPrivateMaterial();
    expect(JSON.stringify(await rows())).not.to.include(String(plain.get(old.kid)?.d));
    const [, successor] = await rows();
    expect(successor.kid).not.to.equal(old.kid);
    expect(service.log.find((line) => line.msg === retirementMessage)).to.deep.include({ successor: successor.kid, signsInSeconds: 10 });
    const [dates] = await query<{ retires: Date; expires: Date; created: Date }>(cp.url, 'select retires, expires, (select created from signing_keys where kid = $2) as created from signing_keys where kid = $1', [
      old.kid,
      successor.kid,
    ]);
    // Stops signing once the successor is published, and verifies until its last token is over.
    expect(dates.retires.getTime() - dates.created.getTime()).to.be.within(9_000, 11_000);
    expect(dates.expires.getTime() - dates.retires.getTime()).to.equal((30 + 3600 + 60) * 1000);

    // During the publish delay the old key signs on, and the successor is already published.
    const signedByOld = await clientToken(service.issuer, credentials);
    expect(decodeProtectedHeader(signedByOld).kid).to.equal(old.kid);
    const published = (await (await fetch(`${service.issuer}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
    expect(published.keys.map((key) => key.kid)).to.have.members([old.kid, successor.kid]);

    let signed = signedByOld;
    const deadline = Date.now() + 20_000;
    while (decodeProtectedHeader(signed).kid === old.kid && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      signed = await clientToken(service.issuer, credentials);
    }
    expect(decodeProtectedHeader(signed).kid).to.equal(successor.kid);
    expect(await verifies(service.issuer, signed)).to.equal(true);
    expect(await verifies(service.issuer, signedByOld)).to.equal(true);
  });

  it('two replicas starting together on plain keys seal them and rotate once', async function () {
    const credentials = await client();
    const [old] = await rows();
    await unsealAll();

    const otherPort = await freePort();
    const started = await Promise.all([startReplica(cp.signingKeySecretKeys, port), startReplica(cp.signingKeySecretKeys, otherPort)]);
    replicas.push(...started.map((replica) => replica.service));
    await expectNoPrivateMaterial();
    const table = await rows();
    expect(table).to.have.length(2);
    const successor = table[1].kid;
    const sealedBy = started.map((replica) => replica.log.find((line) => line.msg === 'signing keys sealed with the first key of the ring')?.sealed ?? 0);
    expect(sealedBy.sort()).to.deep.equal([0, 1]);
    const successors = started.flatMap((replica) => replica.log.filter((line) => line.msg === retirementMessage).map((line) => line.successor));
    expect(successors).to.deep.equal([successor]);
    // Both sign with the old key for the publish delay, and both publish the successor.
    for (const replica of started) {
      expect(decodeProtectedHeader(await clientToken(replica.issuer, credentials)).kid).to.equal(old.kid);
      const published = (await (await fetch(`${replica.issuer}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
      expect(published.keys.map((key) => key.kid)).to.have.members([old.kid, successor]);
    }
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

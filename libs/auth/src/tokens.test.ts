import { expect } from 'chai';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { randomBytes } from 'node:crypto';
import { UnauthenticatedError, type DeveloperPrincipal, type Principal, type SigningKeyRecord, type SigningKeyRepository, type StoredPrivateKey } from '@platform/domain';
import { FakeClock, rejection } from '@platform/testing';
import { ACCESS_TOKEN_TYPE, JwtAccessTokens, JwtTokenVerifier, issueDeveloperToken } from './tokens.js';
import { ConfigError } from '@platform/config';
import { KeySet, SIGNING_ALG, type KeyLog } from './key-set.js';
import { SecretBox } from './secret-box.js';

type StoredKey = SigningKeyRecord & { privateKey: StoredPrivateKey };

/** The ring the key sets of these tests seal with. */
const sealer = new SecretBox([{ id: 'test', key: randomBytes(32) }]);

/** The port in memory, with the semantics the interface documents; returns copies, like a database. */
class InMemorySigningKeys implements SigningKeyRepository {
  readonly rows: StoredKey[] = [];
  listCalls = 0;

  async listVerifying(now: Date): Promise<SigningKeyRecord[]> {
    this.listCalls++;
    return this.newestFirst()
      .filter((row) => !row.expires || row.expires > now)
      .map(({ privateKey: _private, ...record }) => structuredClone(record));
  }

  findSigningCalls = 0;

  async findSigning(now: Date, createdBy: Date): Promise<StoredKey | null> {
    this.findSigningCalls++;
    const row = this.newestFirst().find((r) => (!r.retires || r.retires > now) && r.created <= createdBy);
    return row ? structuredClone(row) : null;
  }

  async insert({ sealedPrivateKey, ...record }: SigningKeyRecord & { sealedPrivateKey: string }): Promise<void> {
    this.rows.push(structuredClone({ ...record, privateKey: { sealed: sealedPrivateKey } }));
  }

  async listPrivateKeys(): Promise<{ kid: string; privateKey: StoredPrivateKey }[]> {
    return this.rows.map((row) => structuredClone({ kid: row.kid, privateKey: row.privateKey }));
  }

  async replacePrivateKey(kid: string, from: StoredPrivateKey, sealed: string): Promise<boolean> {
    const row = this.rows.find((r) => r.kid === kid);
    if (!row || JSON.stringify(row.privateKey) !== JSON.stringify(from)) return false;
    row.privateKey = { sealed };
    return true;
  }

  private turn: Promise<unknown> = Promise.resolve();
  exclusiveRuns = 0;

  /** One at a time, as the advisory lock makes it (no rollback: the tests' work does not fail halfway). */
  exclusively<T>(work: (locked: SigningKeyRepository) => Promise<T>): Promise<T> {
    const run = this.turn.then(() => {
      this.exclusiveRuns++;
      return work(this);
    });
    this.turn = run.catch(() => undefined);
    return run;
  }

  async retireAllExcept(kid: string, retires: Date, expires: Date): Promise<void> {
    for (const row of this.rows) {
      if (row.kid === kid) continue;
      row.retires = row.retires && row.retires < retires ? row.retires : retires;
      row.expires = row.expires && row.expires < expires ? row.expires : expires;
    }
  }

  /** What an operator would do in the database. */
  schedule(kid: string, dates: { retires?: Date | null; expires?: Date | null }): void {
    const row = this.rows.find((r) => r.kid === kid);
    if (!row) throw new Error(`no key ${kid}`);
    Object.assign(row, dates);
  }

  private newestFirst(): StoredKey[] {
    return this.rows
      .map((row, index) => ({ row, index }))
      .sort((a, b) => b.row.created.getTime() - a.row.created.getTime() || b.index - a.index)
      .map(({ row }) => row);
  }
}

/** The principal, which must be a developer's. */
function developer(principal: Principal): DeveloperPrincipal {
  if (principal.kind !== 'developer') throw new Error(`expected a developer principal, got ${principal.kind}`);
  return principal;
}

const ISSUER = 'https://auth.example.test';
const AUDIENCE = 'https://api.example.test';
const START = Date.UTC(2026, 0, 1, 12, 0, 0);
/** The longest token the key sets of these tests sign lives an hour. */
const RETIREMENT = { maxTokenSeconds: 3600 };

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

async function expectInvalidToken(promise: Promise<unknown>): Promise<void> {
  const error = await rejection(promise);
  expect(error).to.be.instanceOf(UnauthenticatedError);
  expect(error).to.have.property('kind', 'unauthenticated');
  expect(error).to.have.property('code', 'invalid_token');
  expect((error as Error).message).to.equal('The access token is missing, invalid or expired');
}

describe('developer tokens', () => {
  let repository: InMemorySigningKeys;
  let clock: FakeClock;
  let keySet: KeySet;
  let verifier: JwtTokenVerifier;

  const settings = () => ({ issuer: ISSUER, audience: AUDIENCE, clock });
  const issue = (overrides: Partial<{ developerId: string; scopes: string[]; ttlSeconds: number }> = {}) =>
    issueDeveloperToken(keySet, settings(), {
      developerId: 'dev-1',
      clientId: 'cli',
      scopes: ['databases:read', 'databases:write'],
      ttlSeconds: 600,
      ...overrides,
    });

  /** Claims as issueDeveloperToken would set them, for tokens built by hand. */
  function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    const now = Math.floor(clock.now().getTime() / 1000);
    return { iss: ISSUER, aud: AUDIENCE, sub: 'dev-1', iat: now, exp: now + 600, kind: 'developer', scope: 'x', ...overrides };
  }

  async function signWithSetKey(payload: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
    const { kid, key } = await keySet.signingKey();
    return new SignJWT(payload).setProtectedHeader({ alg: SIGNING_ALG, kid, typ: ACCESS_TOKEN_TYPE, ...header }).sign(key);
  }

  beforeEach(async () => {
    repository = new InMemorySigningKeys();
    clock = new FakeClock(START);
    keySet = new KeySet({ repository, clock, sealer });
    await keySet.ensureSigningKey();
    verifier = new JwtTokenVerifier(keySet, settings());
  });

  describe('issueDeveloperToken', () => {
    it('issues a token that verifies to the developer principal', async () => {
      const { token } = await issue();
      expect(await verifier.verify(token)).to.deep.equal({
        kind: 'developer',
        developerId: 'dev-1',
        scopes: ['databases:read', 'databases:write'],
      });
    });

    it('verifies a token without scopes to an empty scope list', async () => {
      const { token } = await issue({ scopes: [] });
      expect(developer(await verifier.verify(token)).scopes).to.deep.equal([]);
    });

    it('sets the RFC 9068 header and claims', async () => {
      const issued = await issue({ ttlSeconds: 900 });
      const header = decodeProtectedHeader(issued.token);
      expect(header.alg).to.equal('ES256');
      expect(header.typ).to.equal('at+jwt');
      expect(header.kid).to.equal(repository.rows[0].kid);
      const payload = decodeJwt(issued.token);
      expect(payload).to.include({ iss: ISSUER, aud: AUDIENCE, sub: 'dev-1', client_id: 'cli', scope: 'databases:read databases:write', kind: 'developer' });
      expect(payload.iat).to.equal(START / 1000);
      expect(payload.exp).to.equal(START / 1000 + 900);
      expect(payload.jti).to.be.a('string');
      expect(issued.expiresIn).to.equal(900);
      expect(issued.expiresAt.getTime()).to.equal(START + 900_000);
    });

    it('gives each token its own jti', async () => {
      const a = decodeJwt((await issue()).token);
      const b = decodeJwt((await issue()).token);
      expect(a.jti).not.to.equal(b.jti);
    });

    it('fails without a signing key', async () => {
      const empty = new KeySet({ repository: new InMemorySigningKeys(), clock, sealer });
      const error = await rejection(issueDeveloperToken(empty, settings(), { developerId: 'd', clientId: 'c', scopes: [], ttlSeconds: 60 }));
      expect((error as Error).message).to.match(/No signing key/);
    });
  });

  describe('JwtTokenVerifier', () => {
    it('refuses an expired token with invalid_token', async () => {
      const { token } = await issue({ ttlSeconds: 60 });
      clock.advance(30000);
      expect(developer(await verifier.verify(token)).developerId).to.equal('dev-1');
      clock.advance(60000);
      await expectInvalidToken(verifier.verify(token));
    });

    it('refuses a token of another issuer', async () => {
      const { token } = await issueDeveloperToken(keySet, { ...settings(), issuer: 'https://evil.example.test' }, {
        developerId: 'dev-1',
        clientId: 'cli',
        scopes: [],
        ttlSeconds: 600,
      });
      await expectInvalidToken(verifier.verify(token));
    });

    it('refuses a token for another audience', async () => {
      const { token } = await issueDeveloperToken(keySet, { ...settings(), audience: 'https://other-api.example.test' }, {
        developerId: 'dev-1',
        clientId: 'cli',
        scopes: [],
        ttlSeconds: 600,
      });
      await expectInvalidToken(verifier.verify(token));
    });

    it("refuses a token whose header says alg 'none'", async () => {
      const kid = repository.rows[0].kid;
      const unsigned = `${base64url({ alg: 'none', kid, typ: ACCESS_TOKEN_TYPE })}.${base64url(claims())}.`;
      await expectInvalidToken(verifier.verify(unsigned));
      const withBogusSignature = `${base64url({ alg: 'none', kid, typ: ACCESS_TOKEN_TYPE })}.${base64url(claims())}.AAAA`;
      await expectInvalidToken(verifier.verify(withBogusSignature));
    });

    it('refuses an HS256 token signed with the public key as HMAC secret', async () => {
      const [jwk] = (await keySet.publicJwks()).keys;
      const secret = new TextEncoder().encode(JSON.stringify(jwk));
      const forged = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'HS256', kid: jwk.kid, typ: ACCESS_TOKEN_TYPE })
        .sign(secret);
      await expectInvalidToken(verifier.verify(forged));
    });

    it('refuses a token signed by a key not in the set', async () => {
      const { privateKey } = await generateKeyPair('ES256');
      const unknownKid = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'ES256', kid: 'not-a-key-of-the-set', typ: ACCESS_TOKEN_TYPE })
        .sign(privateKey);
      await expectInvalidToken(verifier.verify(unknownKid));
      // The kid of a real key does not help a foreign signature.
      const borrowedKid = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'ES256', kid: repository.rows[0].kid, typ: ACCESS_TOKEN_TYPE })
        .sign(privateKey);
      await expectInvalidToken(verifier.verify(borrowedKid));
    });

    it('refuses a tampered payload', async () => {
      const { token } = await issue();
      const [header, , signature] = token.split('.');
      const tampered = `${header}.${base64url({ ...decodeJwt(token), sub: 'dev-admin' })}.${signature}`;
      await expectInvalidToken(verifier.verify(tampered));
    });

    it('refuses a token without a kid, or that is not a JWT at all', async () => {
      const { privateKey } = await generateKeyPair('ES256');
      const noKid = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256', typ: ACCESS_TOKEN_TYPE }).sign(privateKey);
      await expectInvalidToken(verifier.verify(noKid));
      for (const garbage of ['', 'abc', 'a.b.c', '...', base64url({ kid: 1 })]) {
        await expectInvalidToken(verifier.verify(garbage));
      }
    });

    it('refuses a correctly signed token with the wrong typ', async () => {
      await expectInvalidToken(verifier.verify(await signWithSetKey(claims(), { typ: 'JWT' })));
      await expectInvalidToken(verifier.verify(await signWithSetKey(claims(), { typ: undefined })));
    });

    it('refuses a correctly signed token that is not a developer token', async () => {
      await expectInvalidToken(verifier.verify(await signWithSetKey(claims({ kind: 'service' }))));
      await expectInvalidToken(verifier.verify(await signWithSetKey(claims({ kind: undefined }))));
    });

    it('refuses a correctly signed token missing sub, exp or iat', async () => {
      for (const claim of ['sub', 'exp', 'iat']) {
        await expectInvalidToken(verifier.verify(await signWithSetKey(claims({ [claim]: undefined }))));
      }
    });

    it('refuses a correctly signed token that is not yet valid', async () => {
      const now = Math.floor(clock.now().getTime() / 1000);
      await expectInvalidToken(verifier.verify(await signWithSetKey(claims({ nbf: now + 3600 }))));
    });
  });

  describe('KeySet', () => {
    it('reads the key set at most once per few seconds for unknown kids (they are attacker input)', async () => {
      await verifier.verify((await issue({ developerId: 'warm' })).token);
      const before = repository.listCalls;
      const stranger = await generateKeyPair('ES256');
      for (let i = 0; i < 20; i++) {
        const forged = await new SignJWT({ kind: 'developer' })
          .setProtectedHeader({ alg: 'ES256', typ: ACCESS_TOKEN_TYPE, kid: `made-up-${i}` })
          .setSubject('x').setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('5m')
          .sign(stranger.privateKey);
        await verifier.verify(forged).then(() => expect.fail('a forged token verified'), (error) => expect(error).to.be.instanceOf(UnauthenticatedError));
      }
      expect(repository.listCalls - before).to.be.at.most(1);
    });

    it('creates one signing key on a new installation and no more after', async () => {
      expect(repository.rows).to.have.length(1);
      await keySet.ensureSigningKey();
      await new KeySet({ repository, clock, sealer }).ensureSigningKey();
      expect(repository.rows).to.have.length(1);
      expect(repository.rows[0]).to.include({ alg: 'ES256', retires: null, expires: null });
    });

    it('after rotate(), signs with the new kid and still verifies tokens of the old key', async () => {
      const oldKid = repository.rows[0].kid;
      const before = await issue({ developerId: 'dev-old' });
      expect(decodeProtectedHeader(before.token).kid).to.equal(oldKid);
      expect(developer(await verifier.verify(before.token)).developerId).to.equal('dev-old');

      clock.advance(1000);
      const newKid = await keySet.rotate();
      expect(newKid).not.to.equal(oldKid);
      const after = await issue({ developerId: 'dev-new' });
      expect(decodeProtectedHeader(after.token).kid).to.equal(newKid);

      expect(developer(await verifier.verify(before.token)).developerId).to.equal('dev-old');
      expect(developer(await verifier.verify(after.token)).developerId).to.equal('dev-new');
    });

    it('publishes a rotated key before it signs, so other replicas verify its tokens', async () => {
      await verifier.verify((await issue()).token);
      const oldKid = repository.rows[0].kid;
      clock.advance(60000);
      const otherReplica = new KeySet({ repository, clock, sealer });
      const newKid = await otherReplica.rotate();
      const sign = () => issueDeveloperToken(otherReplica, settings(), { developerId: 'dev-9', clientId: 'c', scopes: [], ttlSeconds: 60 });
      // Within the publish delay the old key keeps signing: no replica can have loaded the new one yet.
      expect(decodeProtectedHeader((await sign()).token).kid).to.equal(oldKid);
      clock.advance(11000);
      const fromOther = await sign();
      expect(decodeProtectedHeader(fromOther.token).kid).to.equal(newKid);
      expect(developer(await verifier.verify(fromOther.token)).developerId).to.equal('dev-9');
    });

    it('no longer verifies a token of a key whose expiry has passed', async () => {
      const oldKid = repository.rows[0].kid;
      repository.schedule(oldKid, { expires: new Date(START + 10 * 60_000) });
      clock.advance(1000);
      await keySet.rotate();
      const { token } = await issueDeveloperToken(keySet, settings(), { developerId: 'dev-1', clientId: 'c', scopes: [], ttlSeconds: 3600 });
      const old = await signWithKid(oldKid);
      expect(developer(await verifier.verify(old)).developerId).to.equal('dev-old');

      clock.advance((11 * 60) * 1000);
      // The key is cached: the set itself must notice the expiry.
      await expectInvalidToken(verifier.verify(old));
      // A fresh process reads the set without the expired key.
      await expectInvalidToken(new JwtTokenVerifier(new KeySet({ repository, clock, sealer }), settings()).verify(old));
      // The current key still verifies.
      expect(developer(await verifier.verify(token)).developerId).to.equal('dev-1');
    });

    it('does not verify a key that had already expired when the set was first read', async () => {
      const oldKid = repository.rows[0].kid;
      const old = await signWithKid(oldKid);
      repository.schedule(oldKid, { expires: new Date(START - 1000) });
      const fresh = new JwtTokenVerifier(new KeySet({ repository, clock, sealer }), settings());
      await expectInvalidToken(fresh.verify(old));
    });

    it('rotate() with retirement: the old key signs until the new one is published, then verifies only while its tokens can live', async () => {
      const oldKid = (await keySet.signingKey()).kid;
      const oldToken = (await issue({ ttlSeconds: 600 })).token;
      clock.advance(60000);
      const newKid = await keySet.rotate({ maxTokenSeconds: 600 });
      // Other replicas have not loaded the new key yet: the old one goes on signing meanwhile.
      expect((await keySet.signingKey()).kid).to.equal(oldKid);
      clock.advance(11000);
      expect((await keySet.signingKey()).kid).to.equal(newKid);
      expect(developer(await verifier.verify(oldToken)).developerId).to.equal('dev-1');
      // Retired at +10 s; published for a signer's refresh, the longest token lifetime and a minute of slack, then not.
      const published = async () => (await new KeySet({ repository, clock, sealer }).publicJwks()).keys.map((key) => key.kid);
      clock.advance((30 + 600 + 60 - 2) * 1000);
      expect(await published()).to.have.members([newKid, oldKid]);
      clock.advance(2000);
      expect(await published()).to.deep.equal([newKid]);
    });

    it('a replica that cached the old key signs with it at most SIGNING_KEY_REFRESH_SECONDS past its retirement, and those tokens verify until they expire', async () => {
      clock.advance(60000);
      const replica = new KeySet({ repository, clock, sealer, refreshSeconds: 300 });
      const oldKid = (await replica.signingKey()).kid;
      const newKid = await new KeySet({ repository, clock, sealer }).rotate({ maxTokenSeconds: 3600 });
      const signLate = (developerId: string) => issueDeveloperToken(replica, settings(), { developerId, clientId: 'c', scopes: [], ttlSeconds: 3600 });
      clock.advance(29000); // retired 10 s after the rotation; the replica has not looked since
      const late = await signLate('dev-late');
      expect(decodeProtectedHeader(late.token).kid).to.equal(oldKid);
      clock.advance(2000);
      expect(decodeProtectedHeader((await signLate('dev-next')).token).kid).to.equal(newKid);
      clock.advance((3600 - 5) * 1000); // the late token is seconds from its exp
      const verifierElsewhere = new JwtTokenVerifier(new KeySet({ repository, clock, sealer }), settings());
      expect(developer(await verifierElsewhere.verify(late.token)).developerId).to.equal('dev-late');
    });

    it('an expiry set on a key already loaded takes effect at the next read of the set', async () => {
      const { token } = await issue();
      expect(developer(await verifier.verify(token)).developerId).to.equal('dev-1');
      const kid = repository.rows[0].kid;
      repository.schedule(kid, { expires: new Date(clock.now().getTime() + 1_000) });
      clock.advance(301000); // past the set's refresh interval
      await expectInvalidToken(new JwtTokenVerifier(keySet, settings()).verify(token));
    });

    it('refuses the token of a revoked refresh-token family, even when it was verified and cached before', async () => {
      const revoked = new Set<string>();
      const revocable = new JwtTokenVerifier(keySet, { ...settings(), revocations: { isRevoked: (id) => revoked.has(id) } });
      const { token } = await issueDeveloperToken(keySet, settings(), {
        developerId: 'dev-1',
        clientId: 'cli',
        scopes: ['api:read'],
        ttlSeconds: 600,
        familyId: 'family-1',
        workspaceId: 'ws-1',
      });
      expect(await revocable.verify(token)).to.deep.include({ developerId: 'dev-1', familyId: 'family-1', workspaceId: 'ws-1' });
      revoked.add('family-1');
      await expectInvalidToken(revocable.verify(token));
    });

    it('JwtAccessTokens.read answers null for what is not a platform JWT, and the claims for one', async () => {
      const tokens = new JwtAccessTokens(keySet, { ...settings(), ttlSeconds: 600 });
      for (const garbage of ['opaque-refresh-token', 'a.b.c', '', 'x'.repeat(9000)]) expect(await tokens.read(garbage), garbage.slice(0, 20)).to.equal(null);
      const { token } = await tokens.issueForDeveloper({ developerId: 'dev-1', clientId: 'cli', scopes: ['api:read'], workspaceId: null, familyId: 'fam-1' });
      expect(await tokens.read(token)).to.deep.include({ subject: 'dev-1', clientId: 'cli', familyId: 'fam-1', workspaceId: null });
      clock.advance(606000); // past exp and the 5 s clock tolerance
      expect(await tokens.read(token)).to.equal(null);
    });

    it('reads the signing key once per refresh interval, however many tokens it signs, and concurrent signers share the read', async () => {
      clock.advance(60000); // past the first key's publication
      const keys = new KeySet({ repository, clock, sealer, refreshSeconds: 30 });
      const before = repository.findSigningCalls;
      await Promise.all(Array.from({ length: 20 }, () => issueDeveloperToken(keys, settings(), { developerId: 'd', clientId: 'c', scopes: [], ttlSeconds: 60 })));
      expect(repository.findSigningCalls - before).to.equal(1);
      clock.advance(29000);
      await issueDeveloperToken(keys, settings(), { developerId: 'd', clientId: 'c', scopes: [], ttlSeconds: 60 });
      expect(repository.findSigningCalls - before).to.equal(1);
      clock.advance(2000);
      await issueDeveloperToken(keys, settings(), { developerId: 'd', clientId: 'c', scopes: [], ttlSeconds: 60 });
      expect(repository.findSigningCalls - before).to.equal(2);
    });

    it('stops signing with a retired key', async () => {
      const firstKid = repository.rows[0].kid;
      clock.advance(1000);
      const secondKid = await keySet.rotate();
      repository.schedule(secondKid, { retires: new Date(START) });
      const fresh = new KeySet({ repository, clock, sealer });
      expect((await fresh.signingKey()).kid).to.equal(firstKid);
    });

    it('publishes only public keys', async () => {
      clock.advance(1000);
      await keySet.rotate();
      const { keys } = await keySet.publicJwks();
      expect(keys).to.have.length(2);
      expect(keys.map((k) => k.kid)).to.have.members(repository.rows.map((r) => r.kid));
      for (const key of keys) {
        expect(key).not.to.have.property('d');
        for (const field of ['p', 'q', 'dp', 'dq', 'qi', 'k']) expect(key).not.to.have.property(field);
        expect(key).to.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
        expect(key.x).to.be.a('string');
        expect(key.y).to.be.a('string');
      }
      // The repository keeps the private half, sealed: what the check above is about.
      expect(repository.rows[0].privateKey).to.have.property('sealed');
    });

    it('leaves an expired key out of the published set', async () => {
      const oldKid = repository.rows[0].kid;
      clock.advance(1000);
      const newKid = await keySet.rotate();
      repository.schedule(oldKid, { expires: new Date(START + 60_000) });
      clock.advance(120000);
      const { keys } = await keySet.publicJwks();
      expect(keys.map((k) => k.kid)).to.deep.equal([newKid]);
    });

    it('reads the set once for concurrent verifications of an unknown kid', async () => {
      const { privateKey } = await generateKeyPair('ES256');
      const forged = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'ES256', kid: 'unknown', typ: ACCESS_TOKEN_TYPE })
        .sign(privateKey);
      const before = repository.listCalls;
      await Promise.all([1, 2, 3, 4, 5].map(() => expectInvalidToken(verifier.verify(forged))));
      expect(repository.listCalls - before).to.equal(1);
    });
  });

  /** A developer token for dev-old signed with the key `kid` of the repository. */
  async function signWithKid(kid: string): Promise<string> {
    const row = repository.rows.find((r) => r.kid === kid);
    if (!row) throw new Error(`no key ${kid}`);
    if (!('sealed' in row.privateKey)) throw new Error(`key ${kid} is not sealed`);
    const key = await importJWK(JSON.parse(sealer.open(row.privateKey.sealed, `signing-key:${kid}`)) as JWK, 'ES256');
    return new SignJWT(claims({ sub: 'dev-old', exp: Math.floor(clock.now().getTime() / 1000) + 3600 }))
      .setProtectedHeader({ alg: 'ES256', kid, typ: ACCESS_TOKEN_TYPE })
      .sign(key);
  }
});

describe('sealed signing keys', () => {
  const ring = (id: string) => ({ id, key: randomBytes(32) });
  const oldKey = ring('old');
  const newKey = ring('new');
  let repository: InMemorySigningKeys;
  let clock: FakeClock;
  const settings = () => ({ issuer: ISSUER, audience: AUDIENCE, clock });
  const keysWith = (...ringKeys: { id: string; key: Buffer }[]) => new KeySet({ repository, clock, sealer: new SecretBox(ringKeys) });
  const loggedKeysWith = (log: KeyLog, ...ringKeys: { id: string; key: Buffer }[]) => new KeySet({ repository, clock, sealer: new SecretBox(ringKeys), log });
  const sign = (keys: KeySet) => issueDeveloperToken(keys, settings(), { developerId: 'd', clientId: 'c', scopes: [], ttlSeconds: 60 });
  const sealedHalves = () => repository.rows.map((row) => ('sealed' in row.privateKey ? row.privateKey.sealed.split('.')[1] : 'plain'));

  /** A key as a release from before sealing stored it, private JWK in plain text. */
  async function insertPlainKey(kid: string): Promise<Record<string, unknown>> {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const plain = { ...(await exportJWK(privateKey)), kid, alg: 'ES256' };
    repository.rows.push({ kid, alg: 'ES256', publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }, privateKey: { plain }, created: clock.now(), retires: null, expires: null });
    return plain;
  }

  beforeEach(() => {
    repository = new InMemorySigningKeys();
    clock = new FakeClock(START);
  });

  it('stores no private material: the private half is sealed with the first key of the ring, and tokens sign and verify', async () => {
    const keys = keysWith(oldKey);
    await keys.ensureSigningKey();
    const stored = JSON.stringify(repository.rows);
    const { d } = (await keys.signingKey()).privateKey.export({ format: 'jwk' });
    expect(stored).not.to.include('"d":');
    expect(stored).not.to.include(d);
    expect(sealedHalves()).to.deep.equal(['old']);
    const { token } = await sign(keys);
    expect(developer(await new JwtTokenVerifier(keysWith(oldKey), settings()).verify(token)).developerId).to.equal('d');
  });

  it('a sealed half copied into another key\'s row does not open there', async () => {
    const keys = keysWith(oldKey);
    await keys.ensureSigningKey();
    clock.advance(60_000);
    await keys.rotate();
    const [first, second] = repository.rows;
    second.privateKey = structuredClone(first.privateKey);
    clock.advance(60_000);
    const error = await rejection(keysWith(oldKey).signingKey());
    expect(error).to.include({ kind: 'unavailable', code: 'signing_key_unreadable' });
  });

  it('seals plain halves from before sealing, and re-seals with a new first key; the old key can then go', async () => {
    const plain = await insertPlainKey('from-before');
    clock.advance(60_000);
    await keysWith(oldKey).rotate();
    expect(sealedHalves()).to.deep.equal(['plain', 'old']);

    const report = await keysWith(oldKey).sealPrivateKeys(RETIREMENT);
    const successor = repository.rows[2].kid;
    expect(report).to.deep.equal({ sealed: 1, resealed: 0, unreadable: [], successor });
    expect(JSON.stringify(repository.rows)).not.to.include(String(plain.d));
    expect(sealedHalves()).to.deep.equal(['old', 'old', 'old']);

    // Rotation of the ring, step 1: the new key second changes nothing.
    const nothing = { sealed: 0, resealed: 0, unreadable: [], successor: null };
    expect(await keysWith(oldKey, newKey).sealPrivateKeys(RETIREMENT)).to.deep.equal(nothing);
    // Step 2: the new key first re-seals everything, once however many replicas do it.
    expect(await keysWith(newKey, oldKey).sealPrivateKeys(RETIREMENT)).to.deep.equal({ ...nothing, resealed: 3 });
    expect(await keysWith(newKey, oldKey).sealPrivateKeys(RETIREMENT)).to.deep.equal(nothing);
    expect(sealedHalves()).to.deep.equal(['new', 'new', 'new']);
    // Step 3: a ring without the old key signs with what was sealed before.
    clock.advance(60_000);
    const { token } = await sign(keysWith(newKey));
    expect(decodeProtectedHeader(token).kid).to.equal(successor);
    expect(developer(await new JwtTokenVerifier(keysWith(newKey), settings()).verify(token)).developerId).to.equal('d');
  });

  it('retires the keys once kept in plain text: a successor signs after the publish delay, and their tokens verify until they expire', async () => {
    await insertPlainKey('from-before');
    clock.advance(60_000);
    const upgraded = clock.now().getTime();
    const keys = keysWith(oldKey);
    const verifier = () => new JwtTokenVerifier(keysWith(oldKey), settings());
    await keys.prepareForSigning(RETIREMENT);
    const [plain, successor] = repository.rows;
    expect(successor.kid).not.to.equal('from-before');
    expect(sealedHalves()).to.deep.equal(['old', 'old']);
    // Retired as keys:rotate retires: signing stops after the publish delay, verifying once the
    // longest token it may have signed (a replica's last read 30 s on, then an hour, then a minute) is over.
    expect(plain.retires).to.deep.equal(new Date(upgraded + 10_000));
    expect(plain.expires).to.deep.equal(new Date(upgraded + 10_000 + (30 + 3600 + 60) * 1000));
    expect([successor.retires, successor.expires]).to.deep.equal([null, null]);

    // Published first: every replica knows the successor before it signs.
    const signedBefore = await sign(keys);
    expect(decodeProtectedHeader(signedBefore.token).kid).to.equal('from-before');
    expect((await keys.publicJwks()).keys.map((key) => key.kid)).to.deep.equal([successor.kid, 'from-before']);

    clock.advance(10_000);
    const signedAfter = await sign(keys);
    expect(decodeProtectedHeader(signedAfter.token).kid).to.equal(successor.kid);
    expect(developer(await verifier().verify(signedBefore.token)).developerId).to.equal('d');
    expect(developer(await verifier().verify(signedAfter.token)).developerId).to.equal('d');
    // A second start finds nothing in plain text and rotates nothing.
    await keysWith(oldKey).prepareForSigning(RETIREMENT);
    expect(repository.rows).to.have.length(2);
  });

  it('replicas starting together seal and rotate once', async () => {
    await insertPlainKey('from-before');
    await insertPlainKey('also-from-before');
    const reports = await Promise.all([1, 2, 3].map(() => keysWith(oldKey).sealPrivateKeys(RETIREMENT)));
    expect(repository.exclusiveRuns).to.equal(3);
    expect(repository.rows.map((row) => row.kid).slice(0, 2)).to.deep.equal(['from-before', 'also-from-before']);
    expect(repository.rows).to.have.length(3);
    expect(reports.map((report) => [report.sealed, report.successor])).to.deep.equal([
      [2, repository.rows[2].kid],
      [0, null],
      [0, null],
    ]);
  });

  it('a ring without the key a half was sealed with reports it and leaves it as it is', async () => {
    await keysWith(oldKey).ensureSigningKey();
    const before = structuredClone(repository.rows);
    const report = await keysWith(newKey).sealPrivateKeys(RETIREMENT);
    expect(report.sealed + report.resealed).to.equal(0);
    expect(report.unreadable).to.deep.equal([{ kid: before[0].kid, reason: "sealed with key 'old', which is not in the ring" }]);
    expect(repository.rows).to.deep.equal(before);
  });

  it('a plain half an older release wrote after start-up signs until its successor may, sealed at once', async () => {
    const keys = keysWith(oldKey);
    await keys.prepareForSigning(RETIREMENT);
    clock.advance(60_000);
    await insertPlainKey('written-by-an-older-release');
    clock.advance(60_000);
    const { token } = await sign(keys);
    expect(decodeProtectedHeader(token).kid).to.equal('written-by-an-older-release');
    expect(sealedHalves()).to.deep.equal(['old', 'old', 'old']);
    const successor = repository.rows[2].kid;
    clock.advance(10_000);
    expect(decodeProtectedHeader((await sign(keys)).token).kid).to.equal(successor);
  });

  it('a signing key this ring cannot open: 503 signing_key_unreadable, told once per retry interval, never a 500', async () => {
    await keysWith(oldKey).ensureSigningKey();
    clock.advance(60_000);
    const told: string[] = [];
    const log: KeyLog = { info: () => {}, error: (fields) => told.push(`${(fields as { kid: string }).kid}: ${(fields as { reason: string }).reason}`) };
    const keys = new KeySet({ repository, clock, sealer: new SecretBox([newKey]), log });
    const reads = repository.findSigningCalls;
    for (let i = 0; i < 5; i++) {
      const error = await rejection(sign(keys));
      expect(error).to.include({ kind: 'unavailable', code: 'signing_key_unreadable', message: 'Tokens cannot be signed right now; try again later' });
      expect(error.message).not.to.include('old');
    }
    expect(told).to.deep.equal([`${repository.rows[0].kid}: sealed with key 'old', which is not in the ring`]);
    expect(repository.findSigningCalls - reads).to.equal(1);
    clock.advance(5_000);
    await rejection(sign(keys));
    expect(told).to.have.length(2);
  });

  describe('prepareForSigning', () => {
    const logged = () => {
      const lines: { level: string; fields: object; message: string }[] = [];
      return {
        lines,
        info: (fields: object, message: string) => lines.push({ level: 'info', fields, message }),
        error: (fields: object, message: string) => lines.push({ level: 'error', fields, message }),
      };
    };

    it('seals, logs how many and the successor, makes the first key, and logs nothing when there is nothing to do', async () => {
      await insertPlainKey('from-before');
      const log = logged();
      await loggedKeysWith(log, oldKey).prepareForSigning(RETIREMENT);
      expect(log.lines).to.deep.equal([
        { level: 'info', fields: { sealed: 1, resealed: 0, unreadable: 0 }, message: 'signing keys sealed with the first key of the ring' },
        {
          level: 'info',
          fields: { successor: repository.rows[1].kid, signsInSeconds: 10 },
          message: 'signing keys once kept in plain text retire: a new key signs after the publish delay, and they verify until their tokens expire',
        },
      ]);
      const again = logged();
      await loggedKeysWith(again, oldKey).prepareForSigning(RETIREMENT);
      expect(again.lines).to.deep.equal([]);

      const fresh = logged();
      repository = new InMemorySigningKeys();
      await loggedKeysWith(fresh, oldKey).prepareForSigning(RETIREMENT);
      expect(repository.rows).to.have.length(1);
      expect(fresh.lines).to.deep.equal([]);
    });

    it('stops the start with a ConfigError naming SIGNING_KEY_SECRET_KEYS when the key in use does not open', async () => {
      await keysWith(oldKey).ensureSigningKey();
      const log = logged();
      const error = await rejection(loggedKeysWith(log, newKey).prepareForSigning(RETIREMENT));
      expect(error).to.be.instanceOf(ConfigError);
      expect(error.message).to.match(/^SIGNING_KEY_SECRET_KEYS: cannot open the signing key in use \(sealed with key 'old', which is not in the ring\)/);
      // Start-up's report (the key, then the counts), and the failed open of the key in use.
      expect(log.lines.map((line) => line.level)).to.deep.equal(['error', 'info', 'error']);
    });

    it('starts when only a key that no longer signs is unreadable, and logs it', async () => {
      await keysWith(oldKey).ensureSigningKey();
      const oldKid = repository.rows[0].kid;
      clock.advance(60_000);
      // A key the old ring sealed, retired by a rotation under a ring that no longer has that key.
      await keysWith(newKey).rotate({ maxTokenSeconds: 60 });
      clock.advance(60_000);
      const log = logged();
      await loggedKeysWith(log, newKey).prepareForSigning(RETIREMENT);
      expect(log.lines.filter((line) => line.level === 'error').map((line) => line.fields)).to.deep.equal([{ kid: oldKid, reason: "sealed with key 'old', which is not in the ring" }]);
      expect(log.lines.at(-1)?.fields).to.deep.equal({ sealed: 0, resealed: 0, unreadable: 1 });
    });
  });
});

import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { AuthorizationCodeGrant } from '@platform/domain';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { SqlGrantStore } from './grant.store.js';

describe('SqlGrantStore', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let store: SqlGrantStore;
  let developerId: string;
  const now = new Date();

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
    store = new SqlGrantStore(controlPlane.orm);
    developerId = randomUUID();
    await query(controlPlane.url, `insert into developers (id, email, created) values ($1, 'grants@example.test', now())`, [developerId]);
  });

  after(async function () {
    await controlPlane?.close();
    await server?.stop();
  });

  function grant(overrides: Partial<AuthorizationCodeGrant> = {}): AuthorizationCodeGrant {
    return {
      clientId: 'platform-cli',
      developerId,
      workspaceId: null,
      redirectUri: 'http://127.0.0.1:5000/callback',
      codeChallenge: 'c'.repeat(43),
      scopes: ['api:read'],
      expires: new Date(now.getTime() + 60_000),
      ...overrides,
    };
  }

  it('spends a code once: concurrent redemptions give one family, the rest see a replay naming it', async function () {
    await store.saveCode('code-1', grant(), now);
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => store.redeemCode('code-1', 'platform-cli', randomUUID(), now)));
    const redeemed = outcomes.filter((outcome) => outcome.outcome === 'redeemed');
    expect(redeemed).to.have.length(1);
    const familyId = (redeemed[0] as { familyId: string }).familyId;
    for (const outcome of outcomes.filter((o) => o.outcome !== 'redeemed')) expect(outcome).to.deep.equal({ outcome: 'replayed', familyId });
    expect(await store.findFamily(familyId)).to.deep.include({ clientId: 'platform-cli', developerId, scopes: ['api:read'], revoked: null });
  });

  it('does not spend a code for another client, nor an expired one', async function () {
    await store.saveCode('code-2', grant(), now);
    expect(await store.redeemCode('code-2', 'cli_someone_else', randomUUID(), now)).to.deep.equal({ outcome: 'invalid' });
    expect((await store.redeemCode('code-2', 'platform-cli', randomUUID(), now)).outcome).to.equal('redeemed');
    await store.saveCode('code-3', grant({ expires: new Date(now.getTime() - 1) }), now);
    expect(await store.redeemCode('code-3', 'platform-cli', randomUUID(), now)).to.deep.equal({ outcome: 'invalid' });
  });

  it('uses a refresh token once, and revokes a family idempotently', async function () {
    await store.saveCode('code-4', grant(), now);
    const { familyId } = (await store.redeemCode('code-4', 'platform-cli', randomUUID(), now)) as { familyId: string };
    await store.saveRefreshToken('rt-1', { familyId, scopes: ['api:read'], now, expires: new Date(now.getTime() + 60_000) });
    const results = await Promise.all(Array.from({ length: 5 }, () => store.useRefreshToken('rt-1', now)));
    expect(results.filter(Boolean)).to.have.length(1);
    expect((await store.findRefreshToken('rt-1'))?.used).to.be.instanceOf(Date);
    await store.revokeFamily(familyId);
    const revoked = (await store.findFamily(familyId))?.revoked;
    expect(revoked).to.be.instanceOf(Date);
    await store.revokeFamily(familyId);
    expect((await store.findFamily(familyId))?.revoked?.getTime()).to.equal(revoked?.getTime());
  });

  it('purges old codes and families whose refresh tokens all expired a day ago, and nothing live', async function () {
    const longAgo = new Date(now.getTime() - 3 * 86_400_000);
    await store.saveCode('code-old', grant({ expires: new Date(longAgo.getTime() + 60_000) }), longAgo);
    const { familyId: dead } = (await store.redeemCode('code-old', 'platform-cli', randomUUID(), new Date(longAgo.getTime() + 1_000))) as { familyId: string };
    await store.saveRefreshToken('rt-dead', { familyId: dead, scopes: ['api:read'], now: longAgo, expires: new Date(longAgo.getTime() + 86_400_000) });
    await store.saveCode('code-live', grant(), longAgo);
    const { familyId: live } = (await store.redeemCode('code-live', 'platform-cli', randomUUID(), now)) as { familyId: string };
    await query(controlPlane.url, `update token_families set created = $1 where id = $2`, [longAgo, live]);
    await store.saveRefreshToken('rt-live-spent', { familyId: live, scopes: ['api:read'], now: longAgo, expires: new Date(longAgo.getTime() + 86_400_000) });
    await store.saveRefreshToken('rt-live', { familyId: live, scopes: ['api:read'], now, expires: new Date(now.getTime() + 86_400_000) });

    const purged = await store.purge(now);
    expect(purged.families).to.be.at.least(1);
    expect(await store.findFamily(dead)).to.equal(null);
    expect(await store.findRefreshToken('rt-dead')).to.equal(null);
    expect((await query(controlPlane.url, `select 1 from authorization_codes where digest = 'code-old'`)).length).to.equal(0);
    // A live family keeps its spent tokens: their replay must still be recognised.
    expect(await store.findFamily(live)).to.not.equal(null);
    expect(await store.findRefreshToken('rt-live-spent')).to.not.equal(null);
  });
});

import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { AccountTokenRepositories, DataPlaneRepositories, Tenant, User } from '@platform/domain';
import { query } from '@platform/testing';
import { startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';

describe('PgOneTimeTokenStore and PgAccountSecrets', function () {
  let plane: ScratchDataPlane;
  let url: string;
  let repos: DataPlaneRepositories;
  let account: AccountTokenRepositories;
  let ada: User;
  let bob: User;
  let tenant: Tenant;

  before(async function () {
    plane = await startScratchDataPlane();
  });

  beforeEach(async function () {
    const database = await plane.newDatabase('tokens');
    ({ url, repos } = database);
    account = plane.dataPlane.openAccountTokens(database.record);
    ada = await repos.users.create({ email: 'Ada@Example.test', passwordHash: 'old' });
    bob = await repos.users.create({ email: 'bob@example.test', passwordHash: 'bob' });
    tenant = await repos.tenants.create({ name: 'Home' });
  });

  after(async function () {
    await plane?.close();
  });

  const reset = () => ({ purpose: 'password_reset' as const, userId: ada.id, email: 'ada@example.test' });

  it('issues a random 32-byte token and keeps only its SHA-256 digest, expiring after the ttl', async function () {
    const { token, record } = await account.tokens.issue(reset(), 900);
    expect(token).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(record).to.deep.include({ purpose: 'password_reset', userId: ada.id, email: 'ada@example.test', tenantId: null, createdBy: null });
    const rows = await query(url, `select token_hash, extract(epoch from expires - created)::int as ttl, consumed, revoked from auth.one_time_tokens`);
    expect(rows).to.deep.equal([{ token_hash: createHash('sha256').update(token).digest('base64url'), ttl: 900, consumed: null, revoked: null }]);
    expect((await account.tokens.issue(reset(), 900)).token).to.not.equal(token);
  });

  it('consumes a token once: a replay gets nothing', async function () {
    const { token, record } = await account.tokens.issue(reset(), 900);
    expect(await account.tokens.find(token, { purpose: 'password_reset' })).to.deep.equal(record);
    expect(await account.tokens.consume(token, { purpose: 'password_reset', userId: ada.id })).to.deep.equal(record);
    expect(await account.tokens.consume(token, { purpose: 'password_reset' })).to.equal(null);
    expect(await account.tokens.find(token, { purpose: 'password_reset' })).to.equal(null);
  });

  it('refuses an expired token, a token of another purpose, account, address or tenant, and leaves it usable', async function () {
    const { token } = await account.tokens.issue(reset(), 900);
    expect(await account.tokens.consume(token, { purpose: 'email_verification' })).to.equal(null);
    expect(await account.tokens.consume(token, { purpose: 'password_reset', userId: bob.id })).to.equal(null);
    expect(await account.tokens.consume(token, { purpose: 'password_reset', email: 'bob@example.test' })).to.equal(null);
    expect(await account.tokens.consume(token, { purpose: 'password_reset', tenantId: tenant.id })).to.equal(null);
    expect(await account.tokens.consume(token, { purpose: 'password_reset', userId: 'not-a-uuid' })).to.equal(null);
    expect(await account.tokens.consume(token.slice(1), { purpose: 'password_reset' })).to.equal(null);
    expect(await account.tokens.consume(token, { purpose: 'password_reset', userId: ada.id, email: 'ada@example.test' })).to.not.equal(null);

    const expiring = await account.tokens.issue(reset(), 900);
    await query(url, `update auth.one_time_tokens set expires = now() - interval '1 second' where id = $1`, [expiring.record.id]);
    expect(await account.tokens.consume(expiring.token, { purpose: 'password_reset' })).to.equal(null);
  });

  it('of concurrent consumers of one token exactly one wins', async function () {
    const { token } = await account.tokens.issue(reset(), 900);
    const results = await Promise.all(Array.from({ length: 8 }, () => account.tokens.consume(token, { purpose: 'password_reset' })));
    expect(results.filter((result) => result !== null)).to.have.length(1);
    const [{ consumed }] = await query(url, 'select count(*)::int as consumed from auth.one_time_tokens where consumed is not null');
    expect(consumed).to.equal(1);
  });

  it('a deleted user’s tokens are dead; a user or tenant removed takes its tokens along', async function () {
    const { token } = await account.tokens.issue(reset(), 900);
    await query(url, 'update users.users set deleted = now() where id = $1', [ada.id]);
    expect(await account.tokens.consume(token, { purpose: 'password_reset' })).to.equal(null);
    await account.tokens.issue({ purpose: 'tenant_invite', email: 'grace@example.test', tenantId: tenant.id, createdBy: bob.id }, 900);
    await query(url, 'delete from users.users where id = $1', [bob.id]);
    expect((await account.tokens.listLive('tenant_invite', tenant.id)).map((invite) => invite.createdBy)).to.deep.equal([null]);
    await query(url, 'delete from public.tenants where id = $1', [tenant.id]);
    await query(url, 'delete from users.users where id = $1', [ada.id]);
    expect(await query(url, 'select count(*)::int as n from auth.one_time_tokens')).to.deep.equal([{ n: 0 }]);
  });

  it('lists and revokes a tenant’s live invites; revokeAll ends an account’s or an address’s', async function () {
    const invite = () => account.tokens.issue({ purpose: 'tenant_invite', email: 'grace@example.test', tenantId: tenant.id, createdBy: ada.id }, 900);
    const first = await invite();
    const second = await invite();
    expect((await account.tokens.listLive('tenant_invite', tenant.id)).map((record) => record.id)).to.deep.equal([second.record.id, first.record.id]);
    expect(await account.tokens.revoke(first.record.id, 'tenant_invite', tenant.id)).to.equal(true);
    expect(await account.tokens.revoke(first.record.id, 'tenant_invite', tenant.id)).to.equal(false);
    expect(await account.tokens.revoke('nope', 'tenant_invite', tenant.id)).to.equal(false);
    expect(await account.tokens.consume(first.token, { purpose: 'tenant_invite' })).to.equal(null);
    expect(await account.tokens.revokeAll('tenant_invite', { email: 'grace@example.test', tenantId: tenant.id })).to.equal(1);
    expect(await account.tokens.listLive('tenant_invite', tenant.id)).to.deep.equal([]);
    await account.tokens.issue(reset(), 900);
    await account.tokens.issue(reset(), 900);
    expect(await account.tokens.revokeAll('password_reset', { userId: ada.id })).to.equal(2);
  });

  it('refuses an invite without a tenant and any other token without an account', async function () {
    let refused = 0;
    for (const binding of [{ purpose: 'tenant_invite' as const, email: 'x@example.test' }, { purpose: 'email_verification' as const, email: 'x@example.test' }]) {
      await account.tokens.issue(binding, 60).catch((error: { code?: string }) => {
        if (error.code === '23514') refused++;
      });
    }
    expect(refused).to.equal(2);
  });

  it('sets a password, marks an address verified while it is still the user’s, and ends sessions but one', async function () {
    expect(await account.secrets.setPassword(ada.id, 'someone@example.test', 'other')).to.equal(false);
    expect(await account.secrets.setPassword(ada.id, 'ADA@example.test', 'new')).to.equal(true);
    expect(await query(url, 'select secret from auth.credentials where user_id = $1', [ada.id])).to.deep.equal([{ secret: 'new' }]);
    expect(await account.secrets.markEmailVerified(ada.id, 'someone@example.test')).to.equal(false);
    expect(await account.secrets.markEmailVerified(ada.id, 'ada@example.test')).to.equal(true);
    expect((await repos.users.find(ada.id))!.emailVerified).to.be.instanceOf(Date);
    const kept = await repos.sessions.create(ada.id, 600);
    const ended = await repos.sessions.create(ada.id, 600);
    const bobs = await repos.sessions.create(bob.id, 600);
    expect(await account.secrets.endSessions(ada.id, kept.id)).to.equal(1);
    expect(await repos.sessions.isLive(kept.id, ada.id)).to.equal(true);
    expect(await repos.sessions.isLive(ended.id, ada.id)).to.equal(false);
    expect(await repos.sessions.isLive(bobs.id, bob.id)).to.equal(true);
    expect(await account.secrets.endSessions(ada.id)).to.equal(1);
  });

  it('creates an invited user without a password, verified and a member, or nothing', async function () {
    const user = await account.secrets.createInvitedUser({ email: 'Lin@Example.test', name: 'Lin' }, tenant.id);
    expect(user).to.deep.include({ email: 'Lin@Example.test', name: 'Lin' });
    expect(user.emailVerified).to.be.instanceOf(Date);
    expect(await repos.users.tenantIds(user.id)).to.deep.equal([tenant.id]);
    expect(await query(url, 'select count(*)::int as n from auth.credentials where user_id = $1', [user.id])).to.deep.equal([{ n: 0 }]);
    const taken = await account.secrets.createInvitedUser({ email: 'lin@example.test', name: null }, tenant.id).catch((error: unknown) => error);
    expect(taken).to.include({ code: 'email_taken' });
    await repos.tenants.delete(tenant.id);
    const gone = await account.secrets.createInvitedUser({ email: 'max@example.test', name: null }, tenant.id).catch((error: unknown) => error);
    expect(gone).to.include({ code: 'tenant_not_found' });
    expect(await repos.users.findByEmail('max@example.test')).to.equal(null);
  });
});

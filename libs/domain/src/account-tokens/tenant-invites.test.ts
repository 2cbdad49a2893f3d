import { expect } from 'chai';
import { failure } from '../use-cases/assertions.test-support.js';
import { ADDRESS, tokenPlatform } from './account-token-platform.test-support.js';
import { acceptInvite, createInvite, listInvites, revokeInvite } from './tenant-invites.js';

const INVITE_PAGE = 'https://app.example.test/invite';

async function withTenant() {
  const p = tokenPlatform();
  const home = await p.tenant('Home');
  const other = await p.tenant('Other');
  const ada = await p.user('ada@example.com', 'password one', [home]);
  const mallory = await p.user('mallory@example.com', 'password two', [other]);
  const as = (who: typeof ada) => ({ userId: who.user.id, sessionId: who.caller.sessionId });
  const invite = (email: string, who = ada, tenantId = home.id) =>
    createInvite(p.deps, as(who), { databaseId: p.main.id, tenantId, email, clientAddress: ADDRESS, linkBase: INVITE_PAGE });
  return { p, home, other, ada, mallory, as, invite };
}

describe('tenant invites', () => {
  it('mails the invitee; accepting with a password signs a new user up into the tenant, verified, once', async () => {
    const { p, home, ada, as, invite } = await withTenant();
    const created = await invite('Grace@Example.com');
    expect(created).to.deep.include({ tenantId: home.id, email: 'grace@example.com', invitedBy: ada.user.id });
    expect(created.expires.getTime() - created.created.getTime()).to.equal(7 * 86_400_000);
    const [mail] = p.mailer.sent;
    expect(mail).to.deep.include({ to: 'Grace@Example.com', subject: 'You are invited to join Home' });
    expect(mail.text).to.contain('ada@example.com invited Grace@Example.com to join "Home".');
    expect(mail.text).to.contain('within 7 days');
    expect(await listInvites(p.deps, as(ada), { databaseId: p.main.id, tenantId: home.id })).to.deep.equal([created]);

    const token = p.mailer.tokenSentTo('Grace@Example.com');
    expect(await failure(acceptInvite(p.deps, { databaseId: p.main.id, token, password: 'short' }))).to.deep.include({ code: 'invalid_password' });
    const accepted = await acceptInvite(p.deps, { databaseId: p.main.id, token, tenantId: home.id, password: 'grace password', name: ' Grace ' });
    expect(accepted).to.deep.include({ created: true, tenantId: home.id });
    expect(accepted.user).to.deep.include({ email: 'grace@example.com', name: 'Grace' });
    expect(accepted.user.emailVerified).to.be.instanceOf(Date);
    expect(p.data.isMember(accepted.user.id, home.id)).to.equal(true);
    expect(await failure(acceptInvite(p.deps, { databaseId: p.main.id, token, password: 'grace password' }))).to.deep.include({ code: 'invalid_one_time_token' });
    expect(await listInvites(p.deps, as(ada), { databaseId: p.main.id, tenantId: home.id })).to.deep.equal([]);
  });

  it('signs a new user up without a password when none is given, as the family SDK accepts', async () => {
    const { p, home, invite } = await withTenant();
    await invite('lin@example.com');
    const accepted = await acceptInvite(p.deps, { databaseId: p.main.id, token: p.mailer.tokenSentTo('lin@example.com'), email: 'lin@example.com', tenantId: home.id });
    expect(accepted).to.deep.include({ created: true, tenantId: home.id });
    expect(accepted.user.emailVerified).to.be.instanceOf(Date);
    expect(p.data.users.find((row) => row.user.id === accepted.user.id)!.passwordHash).to.equal('');
    expect(p.data.isMember(accepted.user.id, home.id)).to.equal(true);
  });

  it('links an existing account, proven by the token, without its password', async () => {
    const { p, home, mallory, invite } = await withTenant();
    await invite('mallory@example.com');
    const token = p.mailer.tokenSentTo('mallory@example.com');
    const accepted = await acceptInvite(p.deps, { databaseId: p.main.id, token, email: 'MALLORY@example.com' });
    expect(accepted).to.deep.include({ created: false, tenantId: home.id });
    expect(accepted.user.id).to.equal(mallory.user.id);
    expect(p.data.isMember(mallory.user.id, home.id)).to.equal(true);
  });

  it('refuses a token for another tenant or address, an expired, revoked or replaced invite', async () => {
    const { p, home, other, ada, as, invite } = await withTenant();
    await invite('grace@example.com');
    const first = p.mailer.tokenSentTo('grace@example.com');
    const accept = (token: string, extra: object = {}) => acceptInvite(p.deps, { databaseId: p.main.id, token, password: 'grace password', ...extra });
    expect(await failure(accept(first, { tenantId: other.id }))).to.deep.include({ code: 'invalid_one_time_token' });
    expect(await failure(accept(first, { email: 'eve@example.com' }))).to.deep.include({ code: 'invalid_one_time_token' });
    const again = await invite('grace@example.com');
    expect(await failure(accept(first))).to.deep.include({ code: 'invalid_one_time_token' });
    await revokeInvite(p.deps, as(ada), { databaseId: p.main.id, tenantId: home.id, inviteId: again.id });
    expect(await failure(accept(p.mailer.tokenSentTo('grace@example.com')))).to.deep.include({ code: 'invalid_one_time_token' });
    expect(await failure(revokeInvite(p.deps, as(ada), { databaseId: p.main.id, tenantId: home.id, inviteId: again.id }))).to.deep.include({ code: 'invite_not_found' });
    await invite('grace@example.com');
    p.tokens.now = new Date(p.tokens.now.getTime() + 7 * 86_400_000 + 1000);
    expect(await failure(accept(p.mailer.tokenSentTo('grace@example.com')))).to.deep.include({ code: 'invalid_one_time_token' });
    expect(p.data.users.map((row) => row.user.email)).to.not.include('grace@example.com');
  });

  it("keeps other tenants' invites to their members", async () => {
    const { p, home, mallory, as, invite } = await withTenant();
    const created = await invite('grace@example.com');
    const notFound = { name: 'NotFoundError', kind: 'not_found', code: 'tenant_not_found', message: `Tenant '${home.id}' not found` };
    expect(await failure(listInvites(p.deps, as(mallory), { databaseId: p.main.id, tenantId: home.id }))).to.deep.equal(notFound);
    expect(await failure(revokeInvite(p.deps, as(mallory), { databaseId: p.main.id, tenantId: home.id, inviteId: created.id }))).to.deep.equal(notFound);
    expect(await failure(invite('eve@example.com', mallory, home.id))).to.deep.equal(notFound);
  });

  it('refuses inviting a member, past the quota and when throttled', async () => {
    const { p, home, mallory, invite } = await withTenant();
    expect(await failure(invite('ada@example.com'))).to.deep.include({ code: 'already_member' });
    p.mailThrottle.waiting.set(`tenant_invite:${p.main.id}:grace@example.com`, 90);
    expect(await failure(invite('grace@example.com'))).to.deep.include({ code: 'too_many_attempts', retryAfterSeconds: 90 });
    for (let n = 0; n < 100; n++) await p.tokens.issue({ purpose: 'tenant_invite', email: `n${n}@example.com`, tenantId: home.id, createdBy: mallory.user.id }, 60);
    expect(await failure(invite('zed@example.com'))).to.deep.include({ code: 'invite_quota_exceeded' });
  });
});

/**
 * The account-token use cases of libs/domain end to end: real PostgreSQL (the built-in schema, as
 * the API opens it), real mail through libs/mail to an SMTP server in this process, and the link
 * followed from the mail received.
 */
import { expect } from 'chai';
import { parseSmtpUrl } from '@platform/config';
import {
  acceptInvite, createInvite, requestPasswordReset, resetPassword, verifyEmail, requestEmailVerification, type AccountTokenDeps, type Database,
} from '@platform/domain';
import { FairHashingQueue, ScryptPasswordHasher } from '@platform/auth';
import { SmtpMailer } from '@platform/mail';
import { linkIn, query, startTestMailServer, type MailCatcher } from '@platform/testing';
import { startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';

const RESET_PAGE = 'https://app.example.test/reset-password';

describe('password reset, email verification and invites on PostgreSQL, by real mail', function () {
  let plane: ScratchDataPlane;
  let mailServer: MailCatcher;
  let mailer: SmtpMailer;

  before(async function () {
    [plane, mailServer] = await Promise.all([startScratchDataPlane(), startTestMailServer()]);
    mailer = new SmtpMailer(parseSmtpUrl(mailServer.url), 'Platform <no-reply@localhost>');
  });

  after(async function () {
    mailer?.close();
    await mailServer?.close();
    await plane?.close();
  });

  const scrypt = new ScryptPasswordHasher(10);

  async function platform() {
    const database = await plane.newDatabase('accounts');
    const records = new Map<string, Database>([[database.record.id, database.record]]);
    const detached: Promise<void>[] = [];
    const deps: AccountTokenDeps = {
      locator: { findById: async (id) => records.get(id) ?? null, findBySlugAndName: async () => null },
      dataPlane: plane.dataPlane,
      accountTokens: plane.dataPlane,
      mailer,
      mailThrottle: { spend: async () => null },
      detach: (work) => void detached.push(work),
      hasher: new FairHashingQueue(scrypt),
    };
    return { ...database, deps, settle: () => Promise.all(detached.splice(0)) };
  }

  it('forgot password: the mailed link resets it once, ending the sessions; a replay is refused', async function () {
    const { record, repos, url, deps, settle } = await platform();
    const ada = await repos.users.create({ email: 'ada.reset@example.test', passwordHash: await scrypt.hash('old password') });
    const session = await repos.sessions.create(ada.id, 600);
    await requestPasswordReset(deps, { databaseId: record.id, email: 'ADA.reset@example.test', clientAddress: '192.0.2.1', linkBase: RESET_PAGE });
    await settle();
    const link = linkIn(await mailServer.waitForMailTo('ada.reset@example.test'), RESET_PAGE);
    expect(link.searchParams.get('identifier')).to.equal('ada.reset@example.test');
    const token = link.searchParams.get('token')!;

    expect(await resetPassword(deps, { databaseId: record.id, token, password: 'new password', email: 'ada.reset@example.test' })).to.deep.equal({ userId: ada.id });
    const credentials = await repos.users.findCredentials('ada.reset@example.test');
    expect(await scrypt.verify('new password', credentials!.passwordHash)).to.equal(true);
    expect(await repos.sessions.isLive(session.id, ada.id)).to.equal(false);
    const replay = await resetPassword(deps, { databaseId: record.id, token, password: 'third password' }).catch((error: unknown) => error);
    expect(replay).to.include({ code: 'invalid_one_time_token' });
    expect(await query(url, 'select count(*)::int as n from auth.one_time_tokens where consumed is not null')).to.deep.equal([{ n: 1 }]);
  });

  it("verify email: the link verifies its own account, and another account's token is refused", async function () {
    const { record, repos, deps } = await platform();
    const grace = await repos.users.create({ email: 'grace.verify@example.test', passwordHash: 'x' });
    const eve = await repos.users.create({ email: 'eve.verify@example.test', passwordHash: 'x' });
    const graceSession = await repos.sessions.create(grace.id, 600);
    const eveSession = await repos.sessions.create(eve.id, 600);
    const input = { databaseId: record.id, clientAddress: '192.0.2.1', linkBase: 'https://app.example.test/verify' };
    expect(await requestEmailVerification(deps, { userId: grace.id, sessionId: graceSession.id }, input)).to.deep.equal({ sent: true });
    const token = linkIn(await mailServer.waitForMailTo('grace.verify@example.test')).searchParams.get('token')!;
    const stolen = await verifyEmail(deps, { databaseId: record.id, token, caller: { userId: eve.id, sessionId: eveSession.id } }).catch((error: unknown) => error);
    expect(stolen).to.include({ code: 'invalid_one_time_token' });
    expect(await verifyEmail(deps, { databaseId: record.id, token, caller: { userId: grace.id, sessionId: graceSession.id } })).to.deep.equal({ userId: grace.id });
    expect((await repos.users.find(grace.id))!.emailVerified).to.be.instanceOf(Date);
    expect((await repos.users.find(eve.id))!.emailVerified).to.equal(null);
  });

  it('invite: a member invites an address, and the mailed link signs the invitee up into the tenant', async function () {
    const { record, repos, deps } = await platform();
    const tenant = await repos.tenants.create({ name: 'Acme' });
    const owner = await repos.users.create({ email: 'owner.invite@example.test', passwordHash: 'x' }, tenant.id);
    const session = await repos.sessions.create(owner.id, 600);
    await createInvite(deps, { userId: owner.id, sessionId: session.id }, {
      databaseId: record.id, tenantId: tenant.id, email: 'new.invitee@example.test', clientAddress: '192.0.2.1', linkBase: 'https://app.example.test/join',
    });
    const mail = await mailServer.waitForMailTo('new.invitee@example.test');
    expect(mail.subject).to.equal('You are invited to join Acme');
    const token = linkIn(mail, 'https://app.example.test/join').searchParams.get('token')!;
    const accepted = await acceptInvite(deps, { databaseId: record.id, tenantId: tenant.id, token, password: 'invitee password' });
    expect(accepted).to.deep.include({ created: true, tenantId: tenant.id });
    expect(await repos.users.tenantIds(accepted.user.id)).to.deep.equal([tenant.id]);
    expect(accepted.user.emailVerified).to.be.instanceOf(Date);
  });

  it('invite: accepted without a password, as the family SDK does, the invitee joins verified, with none yet', async function () {
    const { record, repos, url, deps } = await platform();
    const tenant = await repos.tenants.create({ name: 'Beta' });
    const owner = await repos.users.create({ email: 'owner.beta@example.test', passwordHash: 'x' }, tenant.id);
    const session = await repos.sessions.create(owner.id, 600);
    await createInvite(deps, { userId: owner.id, sessionId: session.id }, {
      databaseId: record.id, tenantId: tenant.id, email: 'quiet.invitee@example.test', clientAddress: '192.0.2.1', linkBase: 'https://app.example.test/join',
    });
    const link = linkIn(await mailServer.waitForMailTo('quiet.invitee@example.test'));
    const accepted = await acceptInvite(deps, {
      databaseId: record.id, tenantId: tenant.id, token: link.searchParams.get('token')!, email: link.searchParams.get('identifier')!,
    });
    expect(accepted).to.deep.include({ created: true, tenantId: tenant.id });
    expect(await repos.users.tenantIds(accepted.user.id)).to.deep.equal([tenant.id]);
    expect(await query(url, 'select count(*)::int as n from auth.credentials where user_id = $1', [accepted.user.id])).to.deep.equal([{ n: 0 }]);
  });
});

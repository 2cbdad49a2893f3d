import { expect } from 'chai';
import { failure } from '../use-cases/assertions.test-support.js';
import { ADDRESS, RESET_PAGE, tokenPlatform } from './account-token-platform.test-support.js';
import { assertPasswordResetToken } from './family-links.js';
import { requestPasswordReset, resetPassword } from './password-reset.js';

const invalidToken = {
  name: 'ValidationError',
  kind: 'validation',
  code: 'invalid_one_time_token',
  message: 'This link is not valid: it was used already, has expired, or is not for this account. Ask for a new one.',
};

async function withAda() {
  const p = tokenPlatform();
  const ada = await p.user('Ada@Example.com', 'old password');
  const request = { databaseId: p.main.id, email: 'ada@example.com', clientAddress: ADDRESS, linkBase: RESET_PAGE };
  return { p, ada, request };
}

describe('password reset', () => {
  it('mails a link with a one-time token after the answer, and answers alike for an unknown address', async () => {
    const { p, ada, request } = await withAda();
    expect(await requestPasswordReset(p.deps, request)).to.equal(undefined);
    expect(p.detached).to.have.length(1);
    await p.settle();
    expect(p.mailer.sent).to.have.length(1);
    const [mail] = p.mailer.sent;
    expect(mail.to).to.equal('Ada@Example.com');
    expect(mail.subject).to.equal('Reset your password');
    expect(mail.text).to.contain(`\n\nhttps://app.example.test/reset?callbackUrl=%2Fhome&token=secret-1&identifier=Ada%40Example.com\n\n`);
    expect(mail.text).to.contain('within 1 hour');
    expect(p.tokens.rows[0]).to.deep.include({ purpose: 'password_reset', userId: ada.user.id, email: 'ada@example.com' });
    expect(p.tokens.rows[0].expires.getTime() - p.tokens.rows[0].created.getTime()).to.equal(3600_000);

    expect(await requestPasswordReset(p.deps, { ...request, email: 'nobody@example.com' })).to.equal(undefined);
    expect(await requestPasswordReset(p.deps, { ...request, databaseId: 'db-unknown' })).to.equal(undefined);
    await p.settle();
    expect(p.mailer.sent).to.have.length(1);
    expect(p.mailThrottle.spent).to.deep.equal([
      { account: `password_reset:${p.main.id}:ada@example.com`, address: ADDRESS },
      { account: `password_reset:${p.main.id}:nobody@example.com`, address: ADDRESS },
      { account: 'password_reset:db-unknown:ada@example.com', address: ADDRESS },
    ]);
  });

  it('is throttled per address asked about and per client address, accounts or not', async () => {
    const { p, request } = await withAda();
    p.mailThrottle.waiting.set(`password_reset:${p.main.id}:nobody@example.com`, 60);
    expect(await failure(requestPasswordReset(p.deps, { ...request, email: 'Nobody@example.com' }))).to.deep.equal({
      name: 'RateLimitedError',
      kind: 'rate_limited',
      code: 'too_many_attempts',
      message: 'Too many password reset requests; try again later',
      retryAfterSeconds: 60,
    });
    p.mailThrottle.waiting.set('198.51.100.7', 120);
    expect(await failure(requestPasswordReset(p.deps, { ...request, clientAddress: '198.51.100.7' }))).to.deep.include({ retryAfterSeconds: 120 });
    await p.settle();
    expect(p.mailer.sent).to.deep.equal([]);
  });

  it('refuses a malformed address or link base', async () => {
    const { p, request } = await withAda();
    expect(await failure(requestPasswordReset(p.deps, { ...request, email: 'not an email' }))).to.deep.include({ code: 'invalid_email' });
    expect(await failure(requestPasswordReset(p.deps, { ...request, linkBase: '/relative' }))).to.deep.include({ code: 'invalid_link_base' });
  });

  it('sets the password once, ends every session and the other reset links', async () => {
    const { p, ada, request } = await withAda();
    await requestPasswordReset(p.deps, request);
    await requestPasswordReset(p.deps, request);
    await p.settle();
    const [first, second] = p.tokens.rows.map((row) => row.token);
    expect(await resetPassword(p.deps, { databaseId: p.main.id, token: second, password: 'new password' })).to.deep.equal({ userId: ada.user.id });
    expect(p.data.users[0].passwordHash).to.equal('hash:new password');
    expect(p.data.sessions.every((session) => session.revoked)).to.equal(true);
    expect(await failure(resetPassword(p.deps, { databaseId: p.main.id, token: second, password: 'other password' }))).to.deep.equal(invalidToken);
    expect(await failure(resetPassword(p.deps, { databaseId: p.main.id, token: first, password: 'other password' }))).to.deep.equal(invalidToken);
    expect(p.data.users[0].passwordHash).to.equal('hash:new password');
  });

  it('refuses an expired token, one of another purpose or address, and checks the password first', async () => {
    const { p, ada, request } = await withAda();
    await requestPasswordReset(p.deps, request);
    await p.settle();
    const token = p.tokens.rows[0].token;
    expect(await failure(resetPassword(p.deps, { databaseId: p.main.id, token, password: 'short' }))).to.deep.include({ code: 'invalid_password' });
    expect(await failure(resetPassword(p.deps, { databaseId: p.main.id, token, password: 'new password', email: 'eve@example.com' }))).to.deep.equal(invalidToken);
    const verification = await p.tokens.issue({ purpose: 'email_verification', userId: ada.user.id, email: 'ada@example.com' }, 60);
    expect(await failure(resetPassword(p.deps, { databaseId: p.main.id, token: verification.token, password: 'new password' }))).to.deep.equal(invalidToken);
    p.tokens.now = new Date(p.tokens.now.getTime() + 3601_000);
    expect(await failure(resetPassword(p.deps, { databaseId: p.main.id, token, password: 'new password' }))).to.deep.equal(invalidToken);
    expect(p.data.users[0].passwordHash).to.equal('hash:old password');
    expect(p.data.sessions.some((session) => session.revoked)).to.equal(false);
  });

  it('refuses a token mailed to an address the account no longer has, on the link and on the reset', async () => {
    const { p, request } = await withAda();
    await requestPasswordReset(p.deps, request);
    await p.settle();
    const token = p.tokens.rows[0].token;
    p.data.users[0].user = { ...p.data.users[0].user, email: 'ada@elsewhere.test' };
    expect(await failure(assertPasswordResetToken(p.deps, { databaseId: p.main.id, token, email: 'ada@example.com' }))).to.deep.equal(invalidToken);
    expect(await failure(resetPassword(p.deps, { databaseId: p.main.id, token, password: 'new password' }))).to.deep.equal(invalidToken);
    expect(p.data.users[0].passwordHash).to.equal('hash:old password');
  });

  it("keeps the session the reset was made from, and ends the user's others", async () => {
    const { p, ada, request } = await withAda();
    const other = await p.deps.dataPlane.open(p.main).sessions.create(ada.user.id, 60);
    await requestPasswordReset(p.deps, request);
    await p.settle();
    await resetPassword(p.deps, { databaseId: p.main.id, token: p.tokens.rows[0].token, password: 'new password', keepSessionId: ada.caller.sessionId });
    expect(p.data.isLive(ada.caller.sessionId, ada.user.id)).to.equal(true);
    expect(p.data.isLive(other.id, ada.user.id)).to.equal(false);
  });

  it('refuses a token of another database', async () => {
    const { p, request } = await withAda();
    await requestPasswordReset(p.deps, request);
    await p.settle();
    expect(await failure(resetPassword(p.deps, { databaseId: p.globexMain.id, token: p.tokens.rows[0].token, password: 'new password' }))).to.deep.equal(invalidToken);
  });
});

import { expect } from 'chai';
import { failure } from '../use-cases/assertions.test-support.js';
import { ADDRESS, tokenPlatform } from './account-token-platform.test-support.js';
import { requestEmailVerification, verifyEmail } from './email-verification.js';

const VERIFY_PAGE = 'https://app.example.test/verify';

async function withAdaAndBob() {
  const p = tokenPlatform();
  const ada = await p.user('ada@example.com', 'password one');
  const bob = await p.user('bob@example.com', 'password two');
  const input = { databaseId: p.main.id, clientAddress: ADDRESS, linkBase: VERIFY_PAGE };
  return { p, ada, bob, input, caller: (who: typeof ada) => ({ userId: who.user.id, sessionId: who.caller.sessionId }) };
}

describe('email verification', () => {
  it('mails the signed-in user a link whose token verifies their address once', async () => {
    const { p, ada, input, caller } = await withAdaAndBob();
    expect(await requestEmailVerification(p.deps, caller(ada), input)).to.deep.equal({ sent: true });
    const token = p.mailer.tokenSentTo('ada@example.com');
    expect(p.mailer.sent[0].subject).to.equal('Verify your email address');
    expect(p.mailer.sent[0].text).to.contain('within 24 hours');
    expect(p.mailThrottle.spent).to.deep.equal([{ account: `email_verification:${p.main.id}:${ada.user.id}`, address: ADDRESS }]);
    expect(await verifyEmail(p.deps, { databaseId: p.main.id, token, email: 'Ada@Example.com' })).to.deep.equal({ userId: ada.user.id });
    expect(p.data.users[0].user.emailVerified).to.be.instanceOf(Date);
    expect(await failure(verifyEmail(p.deps, { databaseId: p.main.id, token }))).to.deep.include({ code: 'invalid_one_time_token' });
    expect(await requestEmailVerification(p.deps, caller(ada), input)).to.deep.equal({ sent: false });
    expect(p.mailer.sent).to.have.length(1);
  });

  it("refuses another account's token, unused, and a token of another address or purpose", async () => {
    const { p, ada, bob, input, caller } = await withAdaAndBob();
    await requestEmailVerification(p.deps, caller(ada), input);
    const token = p.mailer.tokenSentTo('ada@example.com');
    expect(await failure(verifyEmail(p.deps, { databaseId: p.main.id, token, caller: caller(bob) }))).to.deep.include({ code: 'invalid_one_time_token' });
    expect(await failure(verifyEmail(p.deps, { databaseId: p.main.id, token, email: 'bob@example.com' }))).to.deep.include({ code: 'invalid_one_time_token' });
    const reset = await p.tokens.issue({ purpose: 'password_reset', userId: bob.user.id, email: 'bob@example.com' }, 60);
    expect(await failure(verifyEmail(p.deps, { databaseId: p.main.id, token: reset.token }))).to.deep.include({ code: 'invalid_one_time_token' });
    expect(p.data.users.every((row) => row.user.emailVerified === null)).to.equal(true);
    expect(await verifyEmail(p.deps, { databaseId: p.main.id, token, caller: caller(ada) })).to.deep.equal({ userId: ada.user.id });
  });

  it('refuses a token mailed to an address the user has changed since', async () => {
    const { p, ada, input, caller } = await withAdaAndBob();
    await requestEmailVerification(p.deps, caller(ada), input);
    const token = p.mailer.tokenSentTo('ada@example.com');
    p.data.users[0].user = { ...p.data.users[0].user, email: 'ada@elsewhere.test' };
    expect(await failure(verifyEmail(p.deps, { databaseId: p.main.id, token }))).to.deep.include({ code: 'invalid_one_time_token' });
  });

  it('is throttled, wants a live session', async () => {
    const { p, ada, input, caller } = await withAdaAndBob();
    p.mailThrottle.waiting.set(ADDRESS, 30);
    expect(await failure(requestEmailVerification(p.deps, caller(ada), input))).to.deep.include({ code: 'too_many_attempts', retryAfterSeconds: 30 });
    p.mailThrottle.waiting.clear();
    p.data.sessions[0].revoked = true;
    expect(await failure(requestEmailVerification(p.deps, caller(ada), input))).to.deep.include({ code: 'invalid_token', kind: 'unauthenticated' });
    expect(p.mailer.sent).to.deep.equal([]);
  });
});

import { expect } from 'chai';
import { failure } from '../use-cases/assertions.test-support.js';
import { FakeMailThrottle } from './account-token-fakes.test-support.js';
import { ADDRESS, tokenPlatform } from './account-token-platform.test-support.js';
import { selfSignUp } from './sign-up.js';

describe('self sign-up', () => {
  function open() {
    const p = tokenPlatform();
    const signUpThrottle = new FakeMailThrottle();
    return { p, signUpThrottle, deps: { ...p.deps, selfSignUp: true, signUpThrottle } };
  }

  it('signs a new address up, spending its own budgets (not the mail ones)', async () => {
    const { p, signUpThrottle, deps } = open();
    const { user, result } = await selfSignUp(deps, p.main.id, { email: 'New@Example.com', password: 'password-new' }, ADDRESS);
    expect(user.email).to.equal('New@Example.com');
    expect(result?.session.token).to.be.a('string');
    expect(signUpThrottle.spent).to.deep.equal([{ account: `sign_up:${p.main.id}:new@example.com`, address: ADDRESS }]);
    expect(p.mailThrottle.spent).to.deep.equal([]);
  });

  it('answers a taken address 409 and mails its owner after the answer, with no link', async () => {
    const { p, deps } = open();
    await p.user('ada@example.com', 'password-ada');
    expect(await failure(selfSignUp(deps, p.main.id, { email: 'ADA@example.com', password: 'password-other' }, ADDRESS))).to.include({ code: 'email_taken', kind: 'conflict' });
    // Not awaited by the answer: handed to detach.
    expect(p.detached).to.have.length(1);
    await p.settle();
    expect(p.mailer.sent.map((mail) => [mail.to, mail.subject])).to.deep.equal([['ADA@example.com', 'Someone tried to sign up with your address']]);
    expect(p.mailer.sent[0]!.text).not.to.match(/https?:\/\//);
  });

  it('waits when the budget is spent, creating nothing; refuses a malformed address before spending', async () => {
    const { p, signUpThrottle, deps } = open();
    signUpThrottle.waiting.set(ADDRESS, 120);
    expect(await failure(selfSignUp(deps, p.main.id, { email: 'new@example.com', password: 'password-new' }, ADDRESS))).to.include({ code: 'too_many_attempts', retryAfterSeconds: 120 });
    expect(await p.data.repositories.users.findByEmail('new@example.com')).to.equal(null);
    signUpThrottle.waiting.clear();
    expect(await failure(selfSignUp(deps, p.main.id, { email: 'not an address', password: 'password-new' }, ADDRESS))).to.include({ code: 'invalid_email' });
    expect(signUpThrottle.spent).to.have.length(0);
  });
});

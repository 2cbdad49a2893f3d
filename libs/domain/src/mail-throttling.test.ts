import { expect } from 'chai';
import { DEFAULT_MAIL_POLICY, mailWait } from './mail-throttling.js';

const NOW = new Date('2026-01-01T12:00:00Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);

describe('mail throttling (mailWait)', () => {
  it('lets mails through until a budget is spent, then waits, doubling up to the ceiling', () => {
    expect(mailWait(DEFAULT_MAIL_POLICY, {}, NOW)).to.equal(null);
    expect(mailWait(DEFAULT_MAIL_POLICY, { account: { failures: 2, lastFailure: ago(1) } }, NOW)).to.equal(null);
    expect(mailWait(DEFAULT_MAIL_POLICY, { account: { failures: 3, lastFailure: ago(10) } }, NOW)).to.equal(50);
    expect(mailWait(DEFAULT_MAIL_POLICY, { account: { failures: 4, lastFailure: ago(10) } }, NOW)).to.equal(110);
    expect(mailWait(DEFAULT_MAIL_POLICY, { account: { failures: 40, lastFailure: ago(0) } }, NOW)).to.equal(3600);
    expect(mailWait(DEFAULT_MAIL_POLICY, { account: { failures: 3, lastFailure: ago(60) } }, NOW)).to.equal(null);
  });

  it('holds back a client address past its own budget, whatever the recipients', () => {
    expect(mailWait(DEFAULT_MAIL_POLICY, { address: { failures: 19, lastFailure: ago(0) } }, NOW)).to.equal(null);
    expect(mailWait(DEFAULT_MAIL_POLICY, { address: { failures: 20, lastFailure: ago(0) }, account: { failures: 1, lastFailure: ago(0) } }, NOW)).to.equal(60);
  });
});

import { addressKey, mailWait, type Clock, type MailPolicy, type MailSubject, type MailThrottle, type SignInFailureStore } from '@platform/domain';

/**
 * The budgets of mail the platform sends on request (password reset, email verification,
 * invites): mailWait's policy over counters in the sign-in throttle's store, shared by every
 * replica, under keys of their own. Requests for one account take turns in this process, so a
 * burst is counted one by one and the budget holds.
 */
export class MailSendThrottle implements MailThrottle {
  private readonly turns = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: SignInFailureStore,
    private readonly policy: MailPolicy,
    private readonly clock: Clock,
    /** The counters' key prefix: another prefix is another set of budgets (sign-up's are `sign-up`). */
    private readonly prefix = 'mail',
  ) {}

  spend(subject: MailSubject): Promise<number | null> {
    const account = `${this.prefix}-account:${subject.account}`;
    const address = `${this.prefix}-address:${addressKey(subject.address)}`;
    const previous = this.turns.get(account) ?? Promise.resolve();
    const spent = previous.then(() => this.settle(account, address));
    const done = spent.catch(() => undefined);
    this.turns.set(account, done);
    void done.then(() => {
      if (this.turns.get(account) === done) this.turns.delete(account);
    });
    return spent;
  }

  private async settle(account: string, address: string): Promise<number | null> {
    const now = this.clock.now();
    const since = new Date(now.getTime() - this.policy.memorySeconds * 1000);
    const counts = await this.store.read([account, address], since);
    const wait = mailWait(this.policy, { account: counts.get(account), address: counts.get(address) }, now);
    if (wait === null) await this.store.record([account, address], now, since);
    return wait;
  }
}

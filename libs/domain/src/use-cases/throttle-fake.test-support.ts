import type { LoginThrottle, SignInOutcome, SignInSubject } from '../sign-in-throttling.js';

/** Accounts or addresses in `waiting` wait that many seconds; every other attempt is logged. */
export class FakeThrottle implements LoginThrottle {
  readonly waiting = new Map<string, number>();
  readonly outcomes: { subject: SignInSubject; ok: boolean }[] = [];
  readonly spent: string[] = [];

  async attempt(subject: SignInSubject, verify: () => Promise<boolean>): Promise<SignInOutcome> {
    const wait = this.waiting.get(subject.account ?? '') ?? this.waiting.get(subject.address);
    if (wait !== undefined) return { wait };
    const ok = await verify();
    this.outcomes.push({ subject, ok });
    return { ok };
  }

  async spend(address: string): Promise<number | null> {
    const wait = this.waiting.get(address);
    if (wait !== undefined) return wait;
    this.spent.push(address);
    return null;
  }
}

import type { FailureCount } from './sign-in-throttling.js';
import { delaySeconds } from './sign-in-throttling.js';

/**
 * How often the platform mails one account or on behalf of one address (password reset, email
 * verification): the sign-in throttle's pattern, with every mail counted as a failure is. Past a
 * limit each further request waits, the wait doubling up to a ceiling; the counters are forgotten
 * `memorySeconds` after their last mail.
 */
export interface MailPolicy {
  /** Mails to one account (or one typed address, which has at most one account) before it waits. */
  accountMailsBeforeDelay: number;
  /** Mails requested from one client address, whatever their recipients, before it waits. */
  addressMailsBeforeDelay: number;
  firstDelaySeconds: number;
  maxDelaySeconds: number;
  memorySeconds: number;
}

export const DEFAULT_MAIL_POLICY: MailPolicy = {
  accountMailsBeforeDelay: 3,
  addressMailsBeforeDelay: 20,
  firstDelaySeconds: 60,
  maxDelaySeconds: 3600,
  memorySeconds: 86_400,
};

/** The whole seconds a mail request must wait, or null to go ahead. */
export function mailWait(policy: MailPolicy, counts: { account?: FailureCount; address?: FailureCount }, now: Date): number | null {
  let until = 0;
  const limits: [FailureCount | undefined, number][] = [
    [counts.account, policy.accountMailsBeforeDelay],
    [counts.address, policy.addressMailsBeforeDelay],
  ];
  for (const [count, limit] of limits) {
    const excess = count ? count.failures - limit : -1;
    if (count && excess >= 0) {
      until = Math.max(until, count.lastFailure.getTime() + delaySeconds(policy, excess) * 1000);
    }
  }
  const wait = Math.ceil((until - now.getTime()) / 1000);
  return wait > 0 ? wait : null;
}

/** Who asks for a mail: the account it goes to (an opaque key) and the client's address. */
export interface MailSubject {
  account: string;
  address: string;
}

/** Spends one mail of the subject's budgets (libs/auth, over the sign-in failure store). */
export interface MailThrottle {
  /** The seconds to wait when either budget is spent (and nothing is counted); else counts the mail and answers null. */
  spend(subject: MailSubject): Promise<number | null>;
}

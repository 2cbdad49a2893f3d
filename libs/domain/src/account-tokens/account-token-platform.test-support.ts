// A fake platform for the account-token use cases: fakePlatform's, plus tokens, a mailer and a mail throttle.
import { fakePlatform } from '../use-cases/fakes.test-support.js';
import type { AccountTokenDeps } from './account-token-deps.js';
import { FakeAccountTokens, FakeMailThrottle, FakeMailer } from './account-token-fakes.test-support.js';

export const ADDRESS = '203.0.113.5';
export const RESET_PAGE = 'https://app.example.test/reset?callbackUrl=%2Fhome';

export function tokenPlatform() {
  const p = fakePlatform();
  const accountTokens = new FakeAccountTokens(p.deps.dataPlane);
  const mailer = new FakeMailer();
  const mailThrottle = new FakeMailThrottle();
  /** What deps.detach was handed: await them to see the mails sent after the answer. */
  const detached: Promise<void>[] = [];
  const deps = {
    ...p.deps,
    accountTokens,
    mailer,
    mailThrottle,
    detach: (work: Promise<void>) => void detached.push(work),
  } satisfies AccountTokenDeps;
  const tokens = accountTokens.store(p.main);
  return { ...p, deps, mailer, mailThrottle, tokens, detached, settle: () => Promise.all(detached.splice(0)) };
}

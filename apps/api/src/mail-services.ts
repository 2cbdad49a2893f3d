import type { Logger } from 'pino';
import { MailSendThrottle } from '@platform/auth';
import { DEFAULT_MAIL_POLICY, SIGN_UP_POLICY, systemClock, type Detach, type Mailer, type MailThrottle, type SignInFailureStore } from '@platform/domain';
import { createMailer } from '@platform/mail';
import type { Closers } from '@platform/process';
import type { ApiConfig } from './config.js';

/** The mail half of the domain's AccountTokenDeps (password reset, email verification, invites). */
export interface MailServices {
  mailer: Mailer;
  mailThrottle: MailThrottle;
  signUpThrottle: MailThrottle;
  detach: Detach;
}

/**
 * The API's mail, from SMTP_URL and MAIL_FROM: the mailer, its throttle (counted in the sign-in
 * failure store, shared by replicas) and where mail sent after its answer reports a failure (the
 * log: the client was answered long before). The routes of the API family's auth surface hand
 * these, with the PgDataPlane as `accountTokens`, to the use cases.
 */
export function openMailServices(config: Pick<ApiConfig, 'mail'>, failures: SignInFailureStore, logger: Logger, closers: Closers): MailServices {
  const mailer = createMailer(config.mail);
  if (mailer.close) closers.push('mailer', () => mailer.close?.());
  return {
    mailer,
    mailThrottle: new MailSendThrottle(failures, DEFAULT_MAIL_POLICY, systemClock),
    signUpThrottle: new MailSendThrottle(failures, SIGN_UP_POLICY, systemClock, 'sign-up'),
    detach: (work) => {
      void work.catch((error: unknown) => logger.error({ err: error }, 'a mail sent after its answer failed'));
    },
  };
}

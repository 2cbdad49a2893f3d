import { MailCatcher, type CaughtMail } from '@platform/mail';

/**
 * A real SMTP server in the test's own process, on a free loopback port: point SMTP_URL (or a
 * SmtpMailer) at `url`, then `await server.waitForMailTo(address)` and follow `linkIn(mail, base)`.
 * Close it in `after`.
 */
export function startTestMailServer(): Promise<MailCatcher> {
  return MailCatcher.start({ port: 0 });
}

/** The first link in the mail that starts with `base` (any link when omitted); fails the test when there is none. */
export function linkIn(mail: CaughtMail, base = ''): URL {
  const link = mail.links.find((candidate) => candidate.startsWith(base));
  if (!link) throw new Error(`no link starting with '${base}' in the mail '${mail.subject}' to ${mail.recipients.join(', ')}:\n${mail.text}`);
  return new URL(link);
}

export type { CaughtMail, MailCatcher };

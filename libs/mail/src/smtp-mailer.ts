import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { MailSettings } from '@platform/config';
import { BadGatewayError, UnavailableError, type MailMessage, type Mailer } from '@platform/domain';

/** How long a send waits for the server at each stage: a stuck server costs a bounded wait. */
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/**
 * Sends through the SMTP server of SMTP_URL with nodemailer, a connection per mail. smtps://
 * speaks TLS from the first byte; smtp:// upgrades with STARTTLS when the server offers it, and
 * requires it when the URL carries a login (a password never crosses the network in clear),
 * except to a server on this machine (the development catcher).
 */
export class SmtpMailer implements Mailer {
  private readonly transport: Transporter<SMTPTransport.SentMessageInfo>;

  constructor(
    smtp: NonNullable<MailSettings['smtp']>,
    private readonly from: string,
  ) {
    const loopback = smtp.host === 'localhost' || smtp.host === '::1' || /^127\./.test(smtp.host);
    this.transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      requireTLS: !smtp.secure && smtp.auth !== null && !loopback,
      ...(smtp.auth ? { auth: { user: smtp.auth.user, pass: smtp.auth.pass } } : {}),
      ...TIMEOUTS,
    });
  }

  async send(message: MailMessage): Promise<void> {
    try {
      await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
    } catch (error) {
      throw new BadGatewayError('mail_delivery_failed', 'The mail server did not take the mail; try again later', { cause: error });
    }
  }

  close(): void {
    this.transport.close();
  }
}

/** Where SMTP_URL is unset: every send says so, and nothing else breaks. */
export class UnconfiguredMailer implements Mailer {
  async send(): Promise<void> {
    throw new UnavailableError('mail_not_configured', 'This platform sends no email: its operator has not set SMTP_URL');
  }
}

/** The mailer SMTP_URL and MAIL_FROM describe. */
export function createMailer(settings: MailSettings): Mailer & { close?(): void } {
  return settings.smtp ? new SmtpMailer(settings.smtp, settings.from) : new UnconfiguredMailer();
}

/** One plain-text mail to one address; the adapter adds the sender (MAIL_FROM). */
export interface MailMessage {
  to: string;
  subject: string;
  /** The body; links in it stand on lines of their own, so every mail reader shows them whole. */
  text: string;
}

/**
 * Sends mail (libs/mail over SMTP). A failure to hand the mail to the server rejects with
 * BadGatewayError `mail_delivery_failed`; no mail configured, UnavailableError `mail_not_configured`.
 */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/**
 * Takes work that must not delay an answer (a mail whose sending would tell, by its time, that an
 * account exists): runs it after the answer and reports its failure (the app logs it).
 */
export type Detach = (work: Promise<void>) => void;

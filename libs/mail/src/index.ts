export { createMailer, SmtpMailer, UnconfiguredMailer } from './smtp-mailer.js';
export { MailCatcher, type CaughtMail, type MailCatcherOptions } from './mail-catcher.js';
export { readMail, type ReadMail } from './mail-reader.js';

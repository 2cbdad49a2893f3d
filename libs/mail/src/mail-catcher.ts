import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { readMail, type ReadMail } from './mail-reader.js';

/** A mail the catcher took: who it was for (the envelope's recipients) and what it said. */
export interface CaughtMail extends ReadMail {
  /** The envelope's recipients, in lower case. */
  recipients: string[];
  raw: string;
  received: Date;
  /** The `.eml` file it was written to, when the catcher keeps a folder. */
  file: string | null;
}

export interface MailCatcherOptions {
  /** 0 (the default) for any free port. */
  port?: number;
  /** Loopback only by default: the catcher takes mail from anyone who reaches it. */
  host?: string;
  /** A folder to write each mail to as `<time>-<n>.eml`, as well as keeping it in memory. */
  dir?: string;
  /** The most mails kept in memory (the oldest go first). */
  keep?: number;
}

/** An envelope or message is refused above this size: the catcher is for links, not attachments. */
const MAX_MESSAGE_BYTES = 5 * 1024 * 1024;

/**
 * An SMTP server that delivers nowhere: it takes every mail (any login, no TLS) and keeps it, for
 * `npm start` on a laptop (`npm run mail` shows the latest) and for tests, which wait for a mail
 * to an address and follow its link.
 */
export class MailCatcher {
  readonly mails: CaughtMail[] = [];
  private readonly waiters = new Set<() => void>();
  private serial = 0;

  private constructor(
    private readonly server: SMTPServer,
    readonly host: string,
    readonly port: number,
    private readonly options: MailCatcherOptions,
  ) {}

  static async start(options: MailCatcherOptions = {}): Promise<MailCatcher> {
    const host = options.host ?? '127.0.0.1';
    // The server takes mail only once listening, by which time the catcher exists.
    const made: { catcher?: MailCatcher } = {};
    const server = new SMTPServer({
      name: 'mail-catcher.localhost',
      banner: 'development mail catcher: nothing is delivered',
      disabledCommands: ['STARTTLS'],
      authOptional: true,
      allowInsecureAuth: true,
      size: MAX_MESSAGE_BYTES,
      logger: false,
      onAuth: (auth, _session, callback) => callback(null, { user: auth.username ?? 'anyone' }),
      onData: (stream, session, callback) => {
        made.catcher!.take(stream, session).then(() => callback(), callback);
      },
    });
    server.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      server.server.once('error', onError);
      server.listen(options.port ?? 0, host, () => {
        server.server.off('error', onError);
        resolve();
      });
    });
    made.catcher = new MailCatcher(server, host, (server.server.address() as AddressInfo).port, options);
    return made.catcher;
  }

  /** Where to send: SMTP_URL for the platform. */
  get url(): string {
    return `smtp://${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  /** The newest mail to `address` (case-insensitive), if any. */
  latestTo(address: string): CaughtMail | undefined {
    const wanted = address.toLowerCase();
    return this.mails.filter((mail) => mail.recipients.includes(wanted)).at(-1);
  }

  /** Waits until `address` has had `count` mails (1 by default) and answers the count-th; rejects after `timeoutMs`. */
  async waitForMailTo(address: string, { count = 1, timeoutMs = 5000 }: { count?: number; timeoutMs?: number } = {}): Promise<CaughtMail> {
    const wanted = address.toLowerCase();
    const found = () => this.mails.filter((mail) => mail.recipients.includes(wanted))[count - 1];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const mail = found();
      if (mail) return mail;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail ${count > 1 ? `number ${count} ` : ''}to ${address} within ${timeoutMs} ms (caught: ${this.mails.map((each) => each.recipients.join(',')).join('; ') || 'none'})`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.waiters.add(wake);
      });
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async take(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    if (stream.sizeExceeded) throw Object.assign(new Error('Message too large for the mail catcher'), { responseCode: 552 });
    const raw = Buffer.concat(chunks).toString('utf8');
    const received = new Date();
    let file: string | null = null;
    if (this.options.dir) {
      mkdirSync(this.options.dir, { recursive: true });
      file = join(this.options.dir, `${received.toISOString().replace(/[:.]/g, '-')}-${String(++this.serial).padStart(4, '0')}.eml`);
      writeFileSync(file, raw, { mode: 0o600 });
    }
    const recipients = session.envelope.rcptTo.map((recipient) => recipient.address.toLowerCase());
    this.mails.push({ ...readMail(raw), recipients, raw, received, file });
    if (this.mails.length > (this.options.keep ?? 1000)) this.mails.shift();
    for (const wake of [...this.waiters]) wake();
  }
}

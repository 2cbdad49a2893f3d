/*
 * In-memory fakes of the one-time token store, account secrets, mailer and mail throttle, for
 * the account-token use cases' unit tests (the real store is tested on PostgreSQL in libs/data-plane).
 */
import type { Database } from '../model.js';
import type { MailMessage, Mailer } from '../mail.js';
import type { MailSubject, MailThrottle } from '../mail-throttling.js';
import type { FakeDataPlane } from '../use-cases/fakes.test-support.js';
import type {
  AccountTokenPlane, AccountTokenRepositories, OneTimeTokenPurpose, OneTimeTokenRecord, OneTimeTokenStore, TokenBinding, TokenExpectation,
} from './account-token-ports.js';

interface Row extends OneTimeTokenRecord {
  token: string;
  used: boolean;
  revoked: boolean;
}

/** Tokens of one database; `now` moves to expire them. */
export class FakeTokenStore implements OneTimeTokenStore {
  readonly rows: Row[] = [];
  now = new Date('2026-01-01T00:00:00Z');
  private serial = 0;

  private live(row: Row): boolean {
    return !row.used && !row.revoked && row.expires > this.now;
  }

  private matches(row: Row, expect: TokenExpectation): boolean {
    return (
      row.purpose === expect.purpose &&
      (expect.userId === undefined || row.userId === expect.userId) &&
      (expect.email === undefined || row.email === expect.email) &&
      (expect.tenantId === undefined || row.tenantId === expect.tenantId)
    );
  }

  async issue(binding: TokenBinding, ttlSeconds: number): Promise<{ token: string; record: OneTimeTokenRecord }> {
    const serial = ++this.serial;
    const row: Row = {
      id: `token-${serial}`,
      token: `secret-${serial}`,
      purpose: binding.purpose,
      userId: binding.userId ?? null,
      email: binding.email,
      tenantId: binding.tenantId ?? null,
      createdBy: binding.createdBy ?? null,
      created: this.now,
      expires: new Date(this.now.getTime() + ttlSeconds * 1000),
      used: false,
      revoked: false,
    };
    this.rows.push(row);
    return { token: row.token, record: recordOf(row) };
  }

  async find(token: string, expect: TokenExpectation): Promise<OneTimeTokenRecord | null> {
    const row = this.rows.find((candidate) => candidate.token === token && this.live(candidate) && this.matches(candidate, expect));
    return row ? recordOf(row) : null;
  }

  async consume(token: string, expect: TokenExpectation): Promise<OneTimeTokenRecord | null> {
    const row = this.rows.find((candidate) => candidate.token === token && this.live(candidate) && this.matches(candidate, expect));
    if (!row) return null;
    row.used = true;
    return recordOf(row);
  }

  async listLive(purpose: OneTimeTokenPurpose, tenantId: string): Promise<OneTimeTokenRecord[]> {
    return this.rows.filter((row) => row.purpose === purpose && row.tenantId === tenantId && this.live(row)).reverse().map(recordOf);
  }

  async revoke(id: string, purpose: OneTimeTokenPurpose, tenantId: string): Promise<boolean> {
    const row = this.rows.find((candidate) => candidate.id === id && candidate.purpose === purpose && candidate.tenantId === tenantId && this.live(candidate));
    if (row) row.revoked = true;
    return row !== undefined;
  }

  async revokeAll(purpose: OneTimeTokenPurpose, subject: { userId: string } | { email: string; tenantId: string }): Promise<number> {
    const rows = this.rows.filter(
      (row) => row.purpose === purpose && this.live(row) && ('userId' in subject ? row.userId === subject.userId : row.email === subject.email && row.tenantId === subject.tenantId),
    );
    for (const row of rows) row.revoked = true;
    return rows.length;
  }
}

function recordOf({ token: _token, used: _used, revoked: _revoked, ...record }: Row): OneTimeTokenRecord {
  return record;
}

/** Tokens over the fake data plane: passwords, verification and sessions change its users' rows. */
export class FakeAccountTokens implements AccountTokenPlane {
  readonly stores = new Map<string, FakeTokenStore>();

  constructor(private readonly dataPlane: FakeDataPlane) {}

  store(database: Database): FakeTokenStore {
    let store = this.stores.get(database.id);
    if (!store) this.stores.set(database.id, (store = new FakeTokenStore()));
    return store;
  }

  openAccountTokens(database: Database): AccountTokenRepositories {
    const data = this.dataPlane.of(database);
    return {
      tokens: this.store(database),
      secrets: {
        setPassword: async (userId, email, passwordHash) => {
          const row = data.users.find((candidate) => candidate.user.id === userId && candidate.user.email.toLowerCase() === email);
          if (row) row.passwordHash = passwordHash;
          return row !== undefined;
        },
        markEmailVerified: async (userId, email) => {
          const row = data.users.find((candidate) => candidate.user.id === userId && candidate.user.email.toLowerCase() === email);
          if (row) row.user = { ...row.user, emailVerified: row.user.emailVerified ?? new Date('2026-01-01T00:00:00Z') };
          return row !== undefined;
        },
        createInvitedUser: async (input, tenantId) => {
          const user = await data.repositories.users.create({ email: input.email, name: input.name, passwordHash: '' }, tenantId);
          const row = data.users.find((candidate) => candidate.user.id === user.id)!;
          row.user = { ...row.user, emailVerified: new Date('2026-01-01T00:00:00Z') };
          return row.user;
        },
        endSessions: async (userId, keepSessionId) => {
          const ending = data.sessions.filter((session) => session.userId === userId && !session.revoked && session.id !== keepSessionId);
          for (const session of ending) session.revoked = true;
          return ending.length;
        },
      },
    };
  }
}

/** Keeps every mail; `failing` makes the next sends reject. */
export class FakeMailer implements Mailer {
  readonly sent: MailMessage[] = [];
  failing = false;

  async send(message: MailMessage): Promise<void> {
    if (this.failing) throw new Error('the mail server refused');
    this.sent.push(message);
  }

  /** The token in the link of the last mail to `to`. */
  tokenSentTo(to: string): string {
    const mail = this.sent.filter((message) => message.to === to).at(-1);
    const link = mail?.text.match(/https?:\/\/\S+/)?.[0];
    if (!link) throw new Error(`no link mailed to ${to}`);
    return new URL(link).searchParams.get('token')!;
  }
}

/** Subjects whose account or address is in `waiting` wait that long; every spend is logged. */
export class FakeMailThrottle implements MailThrottle {
  readonly waiting = new Map<string, number>();
  readonly spent: MailSubject[] = [];

  async spend(subject: MailSubject): Promise<number | null> {
    const wait = this.waiting.get(subject.account) ?? this.waiting.get(subject.address);
    if (wait !== undefined) return wait;
    this.spent.push(subject);
    return null;
  }
}

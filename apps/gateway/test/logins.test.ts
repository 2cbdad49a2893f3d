import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { eventually } from '@platform/testing';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';
import { RawConnection, errorFields, saslInitialResponse, saslResponse, startupPacket } from './support/raw-client.js';

const HANDSHAKE_TIMEOUT_MS = 15_000;
const PER_ADDRESS = 100;
const PER_USER = 50;
const PER_USER_ADDRESS = 20;
/**
 * Longer than 300 stalled logins take to arrive on a busy machine: at 3 s, the first ones reached
 * the step's deadline before the last arrived (CI, load average ~8), their slots freed, and more
 * than the cap were let in.
 */
const STEP_TIMEOUT_MS = 8_000;

/** `count` results of `start`, at most `parallel` under way at once (TLS handshakes cost CPU). */
async function inBatches<T>(count: number, parallel: number, start: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await start(i);
      }
    }),
  );
  return results;
}

/** The name of a credential that does not exist, of the same shape as a real one. */
function unknownName(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  return `cred_${[...randomBytes(20)].map((byte) => alphabet[byte % 32]).join('')}`;
}

/** An ErrorResponse's fields, with the user's name in the message put as `<user>`. */
function withoutName(fields: Record<string, string>, user: string): Record<string, string> {
  return { ...fields, M: fields.M.replace(user, '<user>') };
}

describe('gateway: logins in progress, and names that are no credential', function () {
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;

  /** Client backends of the cluster that belong to `role` or have not authenticated yet. */
  async function backendsOf(role: string): Promise<number> {
    const rows = await p.superuserQuery('postgres', "select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and (usename is null or usename = $1)", [role]);
    return rows[0].n as number;
  }

  async function expectLogin(who: TestCredential): Promise<void> {
    const client = await connectVerified(p, who);
    try {
      expect((await client.query('select current_user as name')).rows).to.deep.equal([{ name: who.id }]);
    } finally {
      await client.end();
    }
  }

  /** TLS from `localAddress`, a startup packet for `user`, and the gateway's first answer. */
  async function startLogin(user: string, localAddress: string, parameters: Record<string, string> = {}): Promise<{ connection: RawConnection; first: { type: string; body: Buffer } }> {
    const connection = await RawConnection.openTls(p.gatewayPort, p.ca, { localAddress });
    connection.write(startupPacket({ user, database: db.name, ...parameters }));
    return { connection, first: await connection.message() };
  }

  before(async function () {
    this.timeout(120_000);
    p = await startGatewayPlatform({ GATEWAY_HANDSHAKE_TIMEOUT_MS: String(HANDSHAKE_TIMEOUT_MS), GATEWAY_SCRAM_STEP_TIMEOUT_MS: String(STEP_TIMEOUT_MS) });
    db = await p.newDatabase();
    credential = await db.newCredential();
  });

  after(async function () {
    this.timeout(90_000);
    await p?.stop();
  });

  it('holds no backend for 300 logins left at the password challenge, refuses those past the address’s cap, and lets others log in', async function () {
    this.timeout(90_000);
    const before = await backendsOf(credential.id);
    const started = await inBatches(300, 30, () => startLogin(credential.id, '127.0.0.2'));
    const challenged = started.filter(({ first }) => first.type === 'R');
    const refused = started.filter(({ first }) => first.type === 'E').map(({ first }) => errorFields(first.body));
    expect([challenged.length, refused.length]).to.deep.equal([PER_ADDRESS, 300 - PER_ADDRESS]);
    expect(refused[0]).to.deep.equal({
      S: 'FATAL',
      V: 'FATAL',
      C: '53300',
      M: 'too many logins in progress from this address',
      D: `At most ${PER_ADDRESS} logins from one address may be under way at once.`,
    });
    // Every challenged login waits on the gateway alone.
    expect(await backendsOf(credential.id)).to.equal(before);
    await expectLogin(credential);
    for (const { connection } of started) connection.end();
  });

  it('bounds the backends of logins that answer the challenge and stop there, per user name', async function () {
    this.timeout(90_000);
    const other = await db.newCredential();
    const before = await backendsOf(credential.id);
    // 300 logins from fifteen addresses (each within its own caps), each sending its first SCRAM message.
    const started = await inBatches(300, 30, async (i) => {
      const { connection, first } = await startLogin(credential.id, `127.0.0.${3 + (i % 15)}`);
      expect(first.type).to.equal('R');
      connection.write(saslInitialResponse(`n,,n=,r=${randomBytes(18).toString('base64')}`));
      return { connection, answer: await connection.message() };
    });
    const waiting = started.filter(({ answer }) => answer.type === 'R');
    const refused = started.filter(({ answer }) => answer.type === 'E').map(({ answer }) => errorFields(answer.body));
    expect([waiting.length, refused.length]).to.deep.equal([PER_USER, 300 - PER_USER]);
    expect(refused[0]).to.deep.equal({
      S: 'FATAL',
      V: 'FATAL',
      C: '53300',
      M: `too many logins in progress for user "${credential.id}"`,
      D: `At most ${PER_USER} logins of one user may be under way at once.`,
    });
    const held = await backendsOf(credential.id);
    expect(held - before).to.be.within(1, PER_USER);
    // Another credential is not held back; this one's next login waits for a slot (the trade-off:
    // its unfinished logins end at the SCRAM step's deadline).
    await expectLogin(other);
    await Promise.all(waiting.map(({ connection }) => connection.closed));
    await eventually(async () => ((await backendsOf(credential.id)) <= before ? true : undefined), 10_000, 'the unfinished logins’ backends to go');
    await expectLogin(credential);
  });

  it('lets one address hold only its share of a name’s logins, and cuts logins stalled after the server-first-message at the step’s deadline', async function () {
    this.timeout(60_000);
    const before = await backendsOf(credential.id);
    // One address sends the first SCRAM message of one login more than its share, then stalls.
    const started = await inBatches(PER_USER_ADDRESS + 1, 7, async () => {
      const { connection, first } = await startLogin(credential.id, '127.0.0.30');
      expect(first.type).to.equal('R');
      connection.write(saslInitialResponse(`n,,n=,r=${randomBytes(18).toString('base64')}`));
      return { connection, answer: await connection.message(), at: Date.now() };
    });
    const waiting = started.filter(({ answer }) => answer.type === 'R');
    const refused = started.filter(({ answer }) => answer.type === 'E').map(({ answer }) => errorFields(answer.body));
    expect([waiting.length, refused]).to.deep.equal([
      PER_USER_ADDRESS,
      [
        {
          S: 'FATAL',
          V: 'FATAL',
          C: '53300',
          M: `too many logins in progress for user "${credential.id}" from this address`,
          D: `At most ${PER_USER_ADDRESS} logins of one user from one address may be under way at once.`,
        },
      ],
    ]);
    expect((await backendsOf(credential.id)) - before).to.be.within(1, PER_USER_ADDRESS);
    // Another address logs in as the same credential meanwhile.
    await expectLogin(credential);
    // The stalled logins are refused at the step's deadline (57014, as every refusal with a SQLSTATE), well before the handshake's, and their backends go.
    const ended = await Promise.all(waiting.map(async ({ connection, at }) => ({ code: (await connection.fatalError()).C, ms: Date.now() - at })));
    for (const { code, ms } of ended) {
      expect(code).to.equal('57014');
      expect(ms).to.be.within(STEP_TIMEOUT_MS - 100, STEP_TIMEOUT_MS + 1500);
    }
    await eventually(async () => ((await backendsOf(credential.id)) <= before ? true : undefined), 5_000, 'the stalled logins’ backends to go');
  });

  describe('a real credential’s name and an unknown one read the same', function () {
    type Steps = (connection: RawConnection) => Promise<void>;

    /** The answers to `steps` after a startup packet: every message's type, and error fields without the name and PostgreSQL's source location. */
    async function answersTo(connection: RawConnection, user: string, database: string, steps: Steps, parameters: Record<string, string> = {}) {
      connection.write(startupPacket({ user, database, ...parameters }));
      const first = await connection.message();
      if (first.type === 'E') return { challenge: null, error: withoutName(errorFields(first.body), user) };
      expect([first.type, first.body.readInt32BE(0), first.body.toString('utf8', 4)]).to.deep.equal(['R', 10, 'SCRAM-SHA-256\0\0']);
      await steps(connection);
      const { F, L, R, ...error } = await connection.fatalError();
      void [F, L, R];
      return { challenge: 10, error: withoutName(error, user) };
    }

    /** The gateway's answers to `steps` for `user`. */
    async function answersFor(user: string, steps: Steps, parameters: Record<string, string> = {}) {
      const connection = await RawConnection.openTls(p.gatewayPort, p.ca, { localAddress: '127.0.0.1' });
      return answersTo(connection, user, db.name, steps, parameters);
    }

    /** PostgreSQL's own answers to `steps`, for its superuser, over a direct connection to the cluster. */
    async function clusterAnswers(steps: Steps) {
      const url = new URL(p.postgres.adminUrl);
      const connection = await RawConnection.open(Number(url.port || 5432), { host: url.hostname });
      return answersTo(connection, p.superuser.user, 'postgres', steps);
    }

    /** The server-first-message after `first` went (its shape checked), as attributes. */
    async function serverFirstAfter(connection: RawConnection, nonce: string): Promise<Record<string, string>> {
      const serverFirst = await connection.message();
      expect([serverFirst.type, serverFirst.body.readInt32BE(0)]).to.deep.equal(['R', 11]);
      const text = serverFirst.body.toString('utf8', 4);
      expect(text).to.match(new RegExp(`^r=${nonce.replace(/[+/]/g, '\\$&')}[A-Za-z0-9+/]{24},s=[A-Za-z0-9+/]{22}==,i=4096$`));
      return Object.fromEntries(text.split(',').map((part) => [part[0], part.slice(2)]));
    }

    /** The first SCRAM message, the server's, then `final` built from it. */
    function exchange(final: (serverFirst: Record<string, string>) => string): Steps {
      return async (connection) => {
        const nonce = randomBytes(18).toString('base64');
        connection.write(saslInitialResponse(`n,,n=,r=${nonce}`));
        connection.write(saslResponse(final(await serverFirstAfter(connection, nonce))));
      };
    }

    /** The gateway's answers for a real name and an unknown one, and PostgreSQL's own: all three must be the same. */
    async function compare(steps: Steps) {
      const real = await answersFor(credential.id, steps);
      const unknown = await answersFor(unknownName(), steps);
      const cluster = await clusterAnswers(steps);
      expect({ unknown, cluster }).to.deep.equal({ unknown: real, cluster: real });
      return real.error;
    }

    const proof = () => randomBytes(32).toString('base64');
    const malformed = (detail: string) => ({ S: 'FATAL', V: 'FATAL', C: '08P01', M: 'malformed SCRAM message', D: detail });
    const passwordFailed = { S: 'FATAL', V: 'FATAL', C: '28P01', M: 'password authentication failed for user "<user>"' };

    it('for a wrong password, also when the first message comes after an empty challenge', async function () {
      expect(await compare(exchange(({ r }) => `c=biws,r=${r},p=${proof()}`))).to.deep.equal(passwordFailed);
      // No initial response (length -1): PostgreSQL sends an empty challenge and takes the first message next.
      const late = await compare(async (connection) => {
        connection.write(saslInitialResponse(null));
        const empty = await connection.message();
        expect([empty.type, empty.body.length, empty.body.readInt32BE(0)]).to.deep.equal(['R', 4, 11]);
        const nonce = randomBytes(18).toString('base64');
        connection.write(saslResponse(`n,,n=,r=${nonce}`));
        const { r } = await serverFirstAfter(connection, nonce);
        connection.write(saslResponse(`c=biws,r=${r},p=${proof()}`));
      });
      expect(late).to.deep.equal(passwordFailed);
    });

    it('for first messages PostgreSQL refuses', async function () {
      const nonce = () => randomBytes(18).toString('base64');
      expect(await compare(async (c) => void c.write(saslInitialResponse(`n,,n=,r=${nonce()}`, Buffer.from('x'))))).to.deep.equal({
        S: 'FATAL',
        V: 'FATAL',
        C: '08P01',
        M: 'invalid message format',
      });
      expect(await compare(async (c) => void c.write(saslInitialResponse(`n,,n=,r=${nonce()},1=x`)))).to.deep.equal(malformed('Attribute expected, but found invalid character "\'1\'".'));
      expect(await compare(async (c) => void c.write(saslInitialResponse(`n,,n=,r=${nonce()},x`)))).to.deep.equal(malformed('Expected character "=" for attribute "x".'));
      expect(await compare(async (c) => void c.write(saslInitialResponse(`n,,n=,r=${nonce()}\0,x=y`)))).to.deep.equal(malformed('Message length does not match input length.'));
      expect(await compare(async (c) => void c.write(saslInitialResponse('')))).to.deep.equal(malformed('The message is empty.'));
      expect(await compare(async (c) => void c.write(saslInitialResponse('p=tls-server-end-point,,n=,r=abcdefghijklmnop')))).to.deep.equal(
        malformed('The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.'),
      );
      expect(await compare(async (c) => void c.write(saslInitialResponse(`n,a=someone,n=,r=${nonce()}`)))).to.deep.equal({
        S: 'FATAL',
        V: 'FATAL',
        C: '0A000',
        M: 'client uses authorization identity, but it is not supported',
      });
      expect(await compare(async (c) => void c.write(saslInitialResponse(`n,,n=,r=${nonce()}\x7f`)))).to.deep.include({ M: 'non-printable characters in SCRAM nonce' });
      // Over PostgreSQL's 1024 bytes for a SASL message: refused as a failed password, at once.
      expect(await compare(async (c) => void c.write(saslInitialResponse(`n,,n=,r=${nonce()},x=${'y'.repeat(1024)}`)))).to.deep.equal(passwordFailed);
    });

    it('for final messages PostgreSQL refuses', async function () {
      expect(await compare(exchange(({ r }) => `c=biws,r=${r},junk,p=${proof()}`))).to.deep.equal(malformed('Expected character "=" for attribute "j".'));
      expect(await compare(exchange(({ r }) => `c=biws,r=${r},p=${proof()},p=${proof()}`))).to.deep.equal(malformed('Garbage found at the end of client-final-message.'));
      expect(await compare(exchange(({ r }) => `c=biws,r=${r},p=${proof().replace(/=+$/, '')}`))).to.deep.equal(malformed('Malformed proof in client-final-message.'));
      expect(await compare(exchange(({ r }) => `c=biws,r=${r},p=AAAA`))).to.deep.equal(malformed('Malformed proof in client-final-message.'));
      expect(await compare(exchange(({ r }) => `c=biws,r=${r}`))).to.deep.equal(malformed('Attribute expected, but found end of string.'));
      expect(await compare(exchange(({ r }) => `c=eSws,r=${r},p=${proof()}`))).to.deep.equal({
        S: 'FATAL',
        V: 'FATAL',
        C: '08P01',
        M: 'unexpected SCRAM channel-binding attribute in client-final-message',
      });
      expect(await compare(exchange(() => `c=biws,r=wrong,p=${proof()}`))).to.deep.equal({ S: 'FATAL', V: 'FATAL', C: '08P01', M: 'invalid SCRAM response', D: 'Nonce does not match.' });
      // Extensions between the nonce and the proof are allowed, and so is a comma at the very end.
      expect(await compare(exchange(({ r }) => `c=biws,r=${r},x=1,p=${proof()},`))).to.deep.equal(passwordFailed);
      expect(await compare(exchange(({ r }) => `c=biws,r=${r},x=${'y'.repeat(1024)},p=${proof()}`))).to.deep.equal(passwordFailed);
    });

    it('for a startup packet that routing would make too long', async function () {
      const bare = startupPacket({ user: credential.id, database: db.name, application_name: '' }).length;
      const parameters = { application_name: 'x'.repeat(10_000 - bare) };
      const answers = await answersFor(credential.id, async () => {}, parameters);
      expect(await answersFor(unknownName(), async () => {}, parameters)).to.deep.equal(answers);
      expect(answers).to.deep.include({ challenge: null });
      expect(answers.error).to.include({ C: '08P01', M: 'invalid length of startup packet' });
    });

    it('asks both for the password before any backend starts', async function () {
      const before = await backendsOf(credential.id);
      const { connection, first } = await startLogin(credential.id, '127.0.0.1');
      expect(first.type).to.equal('R');
      expect(await backendsOf(credential.id)).to.equal(before);
      connection.end();
    });
  });
});

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { eventually } from '@platform/testing';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';
import { RawConnection, errorFields, saslInitialResponse, saslResponse, startupPacket } from './support/raw-client.js';

const HANDSHAKE_TIMEOUT_MS = 6000;
const PER_ADDRESS = 100;
const PER_USER = 50;

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
    p = await startGatewayPlatform({ GATEWAY_HANDSHAKE_TIMEOUT_MS: String(HANDSHAKE_TIMEOUT_MS) });
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
    // 300 logins from three addresses (each under its cap), each sending its first SCRAM message.
    const started = await inBatches(300, 30, async (i) => {
      const { connection, first } = await startLogin(credential.id, `127.0.0.${3 + (i % 3)}`);
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
    // its unfinished logins end at the handshake deadline).
    await expectLogin(other);
    await Promise.all(waiting.map(({ connection }) => connection.closed));
    await eventually(async () => ((await backendsOf(credential.id)) <= before ? true : undefined), 10_000, 'the unfinished logins’ backends to go');
    await expectLogin(credential);
  });

  describe('a real credential’s name and an unknown one read the same', function () {
    /** The gateway's answers to `steps` for `user`: every message's type, and error fields without the name. */
    async function answersFor(user: string, steps: (connection: RawConnection, challenge: { type: string; body: Buffer }) => Promise<void>, parameters: Record<string, string> = {}) {
      const { connection, first } = await startLogin(user, '127.0.0.1', parameters);
      if (first.type === 'E') return { challenge: null, error: withoutName(errorFields(first.body), user) };
      expect([first.type, first.body.readInt32BE(0), first.body.toString('utf8', 4)]).to.deep.equal(['R', 10, 'SCRAM-SHA-256\0\0']);
      await steps(connection, first);
      return { challenge: 10, error: withoutName(await connection.fatalError(), user) };
    }

    /** The first SCRAM message, the server's (its shape checked), then `final` built from it. */
    function exchange(final: (serverFirst: Record<string, string>) => string) {
      return async (connection: RawConnection) => {
        const nonce = randomBytes(18).toString('base64');
        connection.write(saslInitialResponse(`n,,n=,r=${nonce}`));
        const serverFirst = await connection.message();
        expect([serverFirst.type, serverFirst.body.readInt32BE(0)]).to.deep.equal(['R', 11]);
        const text = serverFirst.body.toString('utf8', 4);
        expect(text).to.match(new RegExp(`^r=${nonce.replace(/[+/]/g, '\\$&')}[A-Za-z0-9+/]{24},s=[A-Za-z0-9+/]{22}==,i=4096$`));
        const fields = Object.fromEntries(text.split(',').map((part) => [part[0], part.slice(2)]));
        connection.write(saslResponse(final(fields)));
      };
    }

    async function compare(steps: Parameters<typeof answersFor>[1], parameters: Record<string, string> = {}) {
      const real = await answersFor(credential.id, steps, parameters);
      const unknown = await answersFor(unknownName(), steps, parameters);
      expect(unknown).to.deep.equal(real);
      return real;
    }

    it('for a wrong password', async function () {
      const proof = randomBytes(32).toString('base64');
      const answers = await compare(exchange(({ r }) => `c=biws,r=${r},p=${proof}`));
      expect(answers.error).to.deep.equal({ S: 'FATAL', V: 'FATAL', C: '28P01', M: 'password authentication failed for user "<user>"' });
    });

    it('for a malformed proof, a wrong nonce, and a first message asking for channel binding', async function () {
      const short = await compare(exchange(({ r }) => `c=biws,r=${r},p=AAAA`));
      expect(short.error).to.deep.equal({ S: 'FATAL', V: 'FATAL', C: '08P01', M: 'malformed SCRAM message', D: 'Expected a proof of 32 bytes as the last attribute of the client-final-message.' });
      const nonce = await compare(exchange(() => `c=biws,r=wrong,p=${randomBytes(32).toString('base64')}`));
      expect(nonce.error.D).to.equal('The nonce does not match the exchange.');
      const binding = await compare(async (connection) => {
        connection.write(saslInitialResponse('p=tls-server-end-point,,n=,r=abcdefghijklmnop'));
      });
      expect(binding.error).to.deep.equal({ S: 'FATAL', V: 'FATAL', C: '08P01', M: 'malformed SCRAM message', D: 'Channel binding is not supported through the gateway.' });
    });

    it('for a startup packet that routing would make too long', async function () {
      const bare = startupPacket({ user: credential.id, database: db.name, application_name: '' }).length;
      const answers = await compare(async () => {}, { application_name: 'x'.repeat(10_000 - bare) });
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

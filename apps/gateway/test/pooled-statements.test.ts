import { expect } from 'chai';
import pg from 'pg';
import postgres from 'postgres';
import { rejection } from '@platform/testing';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';
import { RawConnection, errorFields, frontendMessage, simpleQuery } from './support/raw-client.js';

type PgError = Error & { code?: string };

const text = (value: string) => Buffer.from(`${value}\0`);
const NONE = Buffer.alloc(2);
const SYNC = frontendMessage('S', Buffer.alloc(0));
const FLUSH = frontendMessage('H', Buffer.alloc(0));
/** Parse (`name`: '' for the unnamed statement), Bind of it (no parameters, no formats) and Execute (all rows). */
const parse = (name: string, sql: string) => frontendMessage('P', Buffer.concat([text(name), text(sql), NONE]));
const bindExecute = (name: string) => [frontendMessage('B', Buffer.concat([text(''), text(name), NONE, NONE, NONE])), frontendMessage('E', Buffer.concat([text(''), Buffer.alloc(4)]))];
const types = (messages: { type: string }[]) => messages.map((message) => message.type);

/** Every message up to ReadyForQuery, errors included. */
async function untilReady(raw: RawConnection): Promise<{ type: string; body: Buffer }[]> {
  const seen: { type: string; body: Buffer }[] = [];
  for (;;) {
    const message = await raw.message();
    seen.push(message);
    if (message.type === 'Z') return seen;
  }
}

/** Protocol-level named prepared statements on the pooled endpoint, with real drivers. */
describe('gateway: prepared statements on the pooled endpoint', function () {
  this.timeout(60_000);
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;

  const pooled = (overrides: Partial<pg.ClientConfig> = {}) => connectVerified(p, { ...credential, connectionUrl: credential.pooledConnectionUrl! }, overrides);

  before(async function () {
    this.timeout(120_000);
    // A pool of 2 and 3 statements per server connection: clients change connections, and statements are evicted.
    p = await startGatewayPlatform({ GATEWAY_POOL_SIZE: '2', GATEWAY_POOL_PREPARED_STATEMENTS: '3' }, { pooled: true });
    db = await p.newDatabase();
    credential = await db.newCredential();
    const setup = await pooled();
    await setup.query('create table items (id int primary key, name text not null)');
    await setup.query("insert into items select n, 'item ' || n from generate_series(1, 20) n");
    await setup.end();
  });

  after(async function () {
    this.timeout(60_000);
    await p?.stop();
  });

  it('runs node-postgres named statements of many clients on whichever server connection is free, past the per-connection cache', async function () {
    const clients = await Promise.all(Array.from({ length: 6 }, () => pooled()));
    try {
      for (let round = 0; round < 4; round++) {
        const answers = await Promise.all(
          clients.map((client, i) =>
            // Five statements per client, three kept per server connection: the rest are prepared again where they run.
            client.query<{ name: string }>({ name: `item${i % 5}`, text: `select name from items where id = $1 and ${i % 5} = ${i % 5}`, values: [i + round + 1] }),
          ),
        );
        expect(answers.map((answer) => answer.rows[0].name)).to.deep.equal(clients.map((_, i) => `item ${i + round + 1}`));
      }
      // Inside a transaction too, with a statement prepared before it.
      await clients[0].query('begin');
      const inside = await clients[0].query({ name: 'item0', text: 'select name from items where id = $1 and 0 = 0', values: [7] });
      await clients[0].query('commit');
      expect(inside.rows).to.deep.equal([{ name: 'item 7' }]);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('answers a Parse that fails, and the statement stays unknown to its client', async function () {
    const client = await pooled();
    try {
      const error = (await rejection(client.query({ name: 'broken', text: 'select from nowhere_at_all', values: [] }))) as PgError;
      expect({ code: error.code, message: error.message }).to.deep.equal({ code: '42P01', message: 'relation "nowhere_at_all" does not exist' });
      expect((await client.query({ name: 'fine', text: 'select 1 + $1::int as n', values: [1] })).rows).to.deep.equal([{ n: 2 }]);
    } finally {
      await client.end();
    }
  });

  it('keeps one client’s statement names its own: another client cannot run them', async function () {
    const owner = await pooled();
    const other = await pooled();
    try {
      const text = 'select name from items where id = $1';
      await owner.query({ name: 'mine', text, values: [1] });
      // node-postgres sends no Parse for a name it believes prepared: the other client Binds a name it never prepared.
      (other as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements.mine = text;
      const error = (await rejection(other.query({ name: 'mine', text, values: [2] }))) as PgError;
      expect({ code: error.code, message: error.message }).to.deep.equal({ code: '26000', message: 'prepared statement "mine" does not exist' });
      // Nor does SQL reach it by the client's name: on the server it has the pool's.
      const executed = (await rejection(owner.query('execute mine(3)'))) as PgError;
      expect({ code: executed.code, message: executed.message }).to.deep.equal({ code: '26000', message: 'prepared statement "mine" does not exist' });
      expect((await owner.query({ name: 'mine', text, values: [4] })).rows).to.deep.equal([{ name: 'item 4' }]);
    } finally {
      await Promise.all([owner.end(), other.end()]);
    }
  });

  it('prepares the pool’s statements again after a client deallocates one of them by SQL', async function () {
    const client = await pooled();
    try {
      const text = 'select name from items where id = $1 and 42 = 42';
      expect((await client.query({ name: 'again', text, values: [5] })).rows).to.deep.equal([{ name: 'item 5' }]);
      const [{ name }] = (await client.query<{ name: string }>('select name from pg_prepared_statements where statement = $1', [text])).rows;
      await client.query(`deallocate "${name}"`);
      expect((await client.query({ name: 'again', text, values: [6] })).rows).to.deep.equal([{ name: 'item 6' }]);
    } finally {
      await client.end();
    }
  });

  it('runs postgres.js with prepare: true, many queries over few server connections', async function () {
    const url = new URL(credential.pooledConnectionUrl!);
    const sql = postgres({
      host: url.hostname,
      port: Number(url.port),
      database: decodeURIComponent(url.pathname.slice(1)),
      username: credential.id,
      password: credential.password,
      ssl: { ca: p.ca, servername: url.hostname },
      prepare: true,
      max: 8,
      onnotice: () => {},
    });
    try {
      const ids = Array.from({ length: 40 }, (_, i) => (i % 20) + 1);
      const rows = await Promise.all(ids.map((id) => sql<{ name: string }[]>`select name from items where id = ${id}`));
      expect(rows.map((found) => found[0].name)).to.deep.equal(ids.map((id) => `item ${id}`));
      const counted = await sql.begin(async (tx) => {
        await tx`update items set name = name where id = ${1}`;
        return tx<{ n: number }[]>`select count(*)::int as n from items where id <= ${5}`;
      });
      expect(counted).to.deep.equal([{ n: 5 }]);
    } finally {
      await sql.end();
    }
  });
  /** A pooled client speaking the protocol itself, logged in. */
  async function rawPooled(): Promise<RawConnection> {
    const raw = await RawConnection.openTls(p.pooledPort!, p.ca);
    await raw.login(credential.id, db.name, credential.password);
    return raw;
  }

  /** Both server sessions of the pool serve a transaction at once: none is held by a client that is done. */
  async function bothSessionsServe(): Promise<void> {
    const others = await Promise.all([pooled({ query_timeout: 5_000 }), pooled({ query_timeout: 5_000 })]);
    try {
      await Promise.all(others.map((other) => other.query('begin')));
      expect((await Promise.all(others.map((other, i) => other.query('select $1::int as n', [i])))).map((answer) => answer.rows[0].n)).to.deep.equal([0, 1]);
      await Promise.all(others.map((other) => other.query('commit')));
    } finally {
      await Promise.all(others.map((other) => other.end()));
    }
  }

  it('follows PostgreSQL past an error in a pipeline: what comes before the Sync (a Query too) is discarded unanswered, and the session goes back after it', async function () {
    const raw = await rawPooled();
    try {
      // A pipeline flushed before its Sync (libpq's pipeline mode): the Parse fails...
      raw.write(Buffer.concat([parse('', 'selec 1'), ...bindExecute(''), FLUSH]));
      const failed = await raw.until('E');
      expect(errorFields(failed[failed.length - 1].body).C).to.equal('42601');
      // ...and what the client sends next up to its Sync the server discards: ReadyForQuery alone.
      raw.write(Buffer.concat([parse('', 'select 1'), ...bindExecute(''), simpleQuery('select 1'), SYNC]));
      expect(types(await raw.until('Z'))).to.deep.equal(['Z']);
      // The same with the Query sent before the error came back: discarded as well.
      raw.write(Buffer.concat([parse('', 'selec 1'), ...bindExecute(''), simpleQuery('select 1'), SYNC]));
      expect(types(await untilReady(raw))).to.deep.equal(['E', 'Z']);
      raw.write(simpleQuery('select 2'));
      expect(types(await raw.until('Z'))).to.deep.equal(['T', 'D', 'C', 'Z']);
      await bothSessionsServe();
    } finally {
      raw.end();
    }
  });

  it('closes, rather than lends, a session left while it skips to a Sync', async function () {
    const raw = await rawPooled();
    raw.write(Buffer.concat([parse('', 'selec 1'), ...bindExecute(''), FLUSH]));
    await raw.until('E');
    // A Query while skipping (discarded by the server), then the client goes without a Sync.
    raw.write(Buffer.concat([simpleQuery('select 1'), frontendMessage('X', Buffer.alloc(0))]));
    await raw.closed;
    await bothSessionsServe();
  });

  it('prepares again a named statement whose Parse the server skipped after an error', async function () {
    const raw = await rawPooled();
    try {
      raw.write(Buffer.concat([parse('', 'selec 1'), parse('skipped', 'select 41 + 1'), ...bindExecute('skipped'), SYNC]));
      expect(types(await untilReady(raw))).to.deep.equal(['E', 'Z']);
      raw.write(Buffer.concat([...bindExecute('skipped'), SYNC]));
      const answer = await untilReady(raw);
      expect(types(answer)).to.deep.equal(['2', 'D', 'C', 'Z']);
      expect(answer[1].body.toString('latin1', 6)).to.equal('42');
    } finally {
      raw.end();
    }
  });

  it('keeps a server session’s statements known after an error skipped the Close of one its cache let go', async function () {
    const raw = await rawPooled();
    try {
      // Three statements fill the session's cache (3 here); a fourth's Parse makes the gateway close the oldest first...
      raw.write(Buffer.concat([parse('s1', 'select 101'), parse('s2', 'select 102'), parse('s3', 'select 103'), SYNC]));
      expect(types(await untilReady(raw))).to.deep.equal(['1', '1', '1', 'Z']);
      // ...but an error before them has the server skip that Close: the statement stays there.
      raw.write(Buffer.concat([parse('', 'selec 1'), parse('s4', 'select 104'), SYNC]));
      expect(types(await untilReady(raw))).to.deep.equal(['E', 'Z']);
      // The same session next (the pool lends the last one back): s1 prepared again, not refused as existing (42P05).
      raw.write(Buffer.concat([...bindExecute('s1'), ...bindExecute('s4'), SYNC]));
      const answer = await untilReady(raw);
      expect(types(answer)).to.deep.equal(['2', 'D', 'C', '2', 'D', 'C', 'Z']);
      expect([answer[1].body.toString('latin1', 6), answer[4].body.toString('latin1', 6)]).to.deep.equal(['101', '104']);
    } finally {
      raw.end();
    }
  });
});

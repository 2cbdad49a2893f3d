import { expect } from 'chai';
import pg from 'pg';
import postgres from 'postgres';
import { rejection } from '@platform/testing';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

type PgError = Error & { code?: string };

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
});

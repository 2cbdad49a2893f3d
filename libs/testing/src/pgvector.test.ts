import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { requirePgvector } from './pgvector.js';
import { createScratchDatabase, dropScratchDatabase, startTestPostgres, withClient, type ScratchDatabase, type TestPostgres } from './postgres.js';

/** Distances from [1,2,3]: 0, 2, 3, 4, sqrt(14), sqrt(194); no two alike, so the order is exact. */
const ITEMS: [number, string][] = [
  [1, '[1,2,3]'],
  [2, '[1,2,5]'],
  [3, '[4,2,3]'],
  [4, '[1,6,3]'],
  [5, '[10,10,10]'],
  [6, '[0,0,0]'],
];
const NEAREST_FOUR = [
  { id: 1, distance: 0 },
  { id: 2, distance: 2 },
  { id: 3, distance: 3 },
  { id: 6, distance: Math.sqrt(14) },
];

/** A table with a vector(3) column and an HNSW index, and what a nearest-neighbour query finds with it. */
async function searchWithHnsw(client: pg.Client): Promise<{ rows: unknown[]; plan: string[] }> {
  await client.query('create table items (id int primary key, embedding vector(3))');
  for (const [id, embedding] of ITEMS) await client.query('insert into items values ($1, $2)', [id, embedding]);
  await client.query('create index items_embedding on items using hnsw (embedding vector_l2_ops)');
  await client.query('set enable_seqscan = off');
  const nearest = "select id, embedding <-> '[1,2,3]' as distance from items order by embedding <-> '[1,2,3]' limit 4";
  const rows = (await client.query(nearest)).rows;
  const plan = (await client.query(`explain (costs off) ${nearest}`)).rows.map((row: Record<string, string>) => row['QUERY PLAN'].trim());
  return { rows, plan };
}

describe('pgvector on the embedded servers the test fixtures start', function () {
  this.timeout(60_000);
  let extensions: string;
  let server: TestPostgres;
  let database: ScratchDatabase;

  before(async function () {
    if (process.env.DATABASE_URL) {
      console.log('      skipped: DATABASE_URL names a server of its own, whose extensions are its own');
      this.skip(); // skip reason: DATABASE_URL names a server of its own, whose extensions are not the platform's
    }
    // Skipped outside CI only when pgvector is not fetched yet (requirePgvector prints why; under CI it fails).
    extensions = requirePgvector(() => this.skip());
    server = await startTestPostgres();
  });

  beforeEach(async function () {
    database = await createScratchDatabase(server, 'pgvector');
  });

  afterEach(async function () {
    if (database) await dropScratchDatabase(server, database.name);
  });

  after(async function () {
    await server?.stop();
  });

  it('a superuser creates it at the installed version, and an HNSW index answers a nearest-neighbour query in order', async function () {
    const installed = /^default_version = '(.*)'$/m.exec(readFileSync(join(extensions, 'share', 'extension', 'vector.control'), 'utf8'))![1];
    await withClient(database.url, async (client) => {
      await client.query('create extension vector');
      expect((await client.query("select extversion from pg_extension where extname = 'vector'")).rows).to.deep.equal([{ extversion: installed }]);
      const { rows, plan } = await searchWithHnsw(client);
      expect(rows).to.deep.equal(NEAREST_FOUR);
      expect(plan).to.deep.equal(['Limit', '->  Index Scan using items_embedding on items', "Order By: (embedding <-> '[1,2,3]'::vector)"]);
      // sparsevec's input reads its indices with strtol, the C library call tools/pg-extensions.mjs re-points.
      expect((await client.query("select '{1:1.5,3:2}/3'::sparsevec::vector::text as v")).rows).to.deep.equal([{ v: '[1.5,0,2]' }]);
    });
  });

  it('a plain role with CREATE on the database creates it too (it is trusted), owns it, and searches with its own index', async function () {
    const role = `${database.name}_owner`;
    await withClient(database.url, async (client) => {
      await client.query(`create role ${role} login password 'vector-test'`);
      await client.query(`grant create on database ${database.name} to ${role}`);
      await client.query(`create schema authorization ${role}`);
    });
    const url = new URL(database.url);
    url.username = role;
    url.password = 'vector-test';
    try {
      await withClient(url.toString(), async (client) => {
        expect((await client.query('select rolsuper from pg_roles where rolname = current_user')).rows).to.deep.equal([{ rolsuper: false }]);
        await client.query('create extension vector');
        expect((await client.query("select extowner::regrole::text as owner, extnamespace::regnamespace::text as schema from pg_extension where extname = 'vector'")).rows).to.deep.equal([
          { owner: role, schema: role },
        ]);
        const { rows, plan } = await searchWithHnsw(client);
        expect(rows).to.deep.equal(NEAREST_FOUR);
        expect(plan[1]).to.equal('->  Index Scan using items_embedding on items');
      });
    } finally {
      await withClient(server.adminUrl, async (client) => {
        await client.query(`drop database ${database.name} with (force)`);
        await client.query(`drop role ${role}`);
      });
    }
  });
});

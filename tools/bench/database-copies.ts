// `npm run bench:database-copies [-- --mb 100]`: how long a branch (POST W/databases with
// from {database}) and a point-in-time restore (from {database, at}) of a database of `mb` MB take
// from the request to READY, on a platform of its own (the API as its own process, an embedded
// PostgreSQL that archives its WAL with pgBackRest, loopback only). The source is filled after the
// first base backup, so both copies replay its WAL too: the worst case until the next backup.
// Stops by itself (a time limit); removes what it made.
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createTestControlPlane } from '@platform/test-fixtures';
import { MANY_DATABASES_SETTINGS, startEmbeddedPostgres } from '@platform/postgres-launcher';
import { eventually, freePort, scratchDir } from '@platform/testing';
import { audience, expectStatus, issuer, provisionDatabase, startApiProcess, Teardown, timeLimit, type Request } from './support.js';

const { values: flags } = parseArgs({ options: { mb: { type: 'string', default: '100' } } });
const MEGABYTES = Number(flags.mb);
const PGBACKREST = resolve(process.env.BACKUP_PGBACKREST ?? '.data/pgbackrest/bin/pgbackrest');

const teardown = new Teardown();
const done = timeLimit(3600, teardown.run);

async function run<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

async function untilReady(request: Request, token: string, path: string): Promise<void> {
  await eventually(async () => ((await request('GET', path, { token })).body?.status === 'READY' ? true : undefined), 3_600_000, `${path} READY`);
}

/** A credential's URL straight to the cluster. */
async function credentialUrl(request: Request, token: string, path: string, serverUrl: (database: string) => string, physicalName: string): Promise<string> {
  const created = await request('POST', `${path}/credentials`, { token });
  expectStatus(created, 201, 'create credential');
  const url = new URL(serverUrl(physicalName));
  url.username = created.body.id;
  url.password = encodeURIComponent(created.body.password);
  return url.href;
}

try {
  if (!existsSync(PGBACKREST)) throw new Error(`pgBackRest is not at ${PGBACKREST}: run node tools/pgbackrest.mjs`);
  const dir = scratchDir('bench-copies-');
  teardown.add(dir, async (path) => rmSync(path, { recursive: true, force: true }));
  const server = await startEmbeddedPostgres({
    dir: join(dir, 'pg'),
    port: await freePort(),
    settings: MANY_DATABASES_SETTINGS,
    backups: { pgbackrest: PGBACKREST, repoDir: join(dir, 'repo'), stanza: 'bench', retentionDays: 1, walQueueMaxMiB: 1024, archiveTimeoutSeconds: 60 },
  });
  teardown.add(server, (handle) => handle.stop());
  const postgres = { adminUrl: server.url('postgres'), urlFor: (name: string) => server.url(name), stop: () => server.stop() };
  const controlPlane = teardown.add(await createTestControlPlane(postgres, { issuer, audience }), (plane) => plane.close());
  const api = teardown.add(
    await startApiProcess(controlPlane, { COMPUTE_TYPES: '[]', COMPUTE_DIR: join(dir, 'compute'), BACKUP_PGBACKREST: PGBACKREST, BACKUP_CHECK_MS: '500', LOG_LEVEL: 'error' }),
    (app) => app.stop(),
  );
  const { request } = api;
  await eventually(async () => ((await request('GET', '/readyz')).body?.backups?.[0]?.restorableFrom ? true : undefined), 120_000, 'the first base backup');

  const { developerToken: token, databasePath } = await provisionDatabase(controlPlane, request, { workspace: 'bench-copies', database: 'source' });
  const source = (await request('GET', databasePath, { token })).body;
  const physical = async (id: string) => (await run<{ physical_name: string }>(controlPlane.url, `select physical_name from databases where id = '${id}'`))[0].physical_name;
  const sourceUrl = await credentialUrl(request, token, databasePath, (name) => server.url(name), await physical(source.id));
  // About 300 bytes on disk per row with its index: `mb` MB of table and index.
  const rows = MEGABYTES * 3_400;
  let started = performance.now();
  await run(sourceUrl, `create table filler (id bigint primary key, body text not null); insert into filler select g, repeat(md5(g::text), 6) from generate_series(1, ${rows}) g`);
  const [{ bytes }] = await run<{ bytes: string }>(sourceUrl, 'select pg_database_size(current_database())::text as bytes');
  console.log(`source: ${(Number(bytes) / 1e6).toFixed(0)} MB on disk, ${rows} rows, filled in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const [{ at }] = await run<{ at: Date }>(sourceUrl, 'select clock_timestamp() as at');

  const W = '/workspaces/bench-copies/databases';
  for (const [label, from] of [
    ['branch (no at)', { database: 'source' }],
    ['point-in-time restore', { database: 'source', at: at.toISOString() }],
  ] as const) {
    const name = label.startsWith('branch') ? 'branched' : 'restored';
    started = performance.now();
    expectStatus(await request('POST', W, { token, json: { databaseName: name, from } }), 201, `create ${name}`);
    await untilReady(request, token, `${W}/${name}`);
    const seconds = (performance.now() - started) / 1000;
    const copy = (await request('GET', `${W}/${name}`, { token })).body;
    const copyUrl = await credentialUrl(request, token, `${W}/${name}`, (database) => server.url(database), await physical(copy.id));
    const [{ count }] = await run<{ count: string }>(copyUrl, 'select count(*)::text as count from filler');
    console.log(`${label}: ${seconds.toFixed(1)} s from the request to READY (${count} rows)`);
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await teardown.run();
  done();
}

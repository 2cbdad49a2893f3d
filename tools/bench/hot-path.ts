// `npm run bench:hot-path [-- --profile]`: the authenticated hot read, GET /workspaces/{ws}/databases/{db}/tenants
// with a user token (a member of 3 tenants), against the API as a separate process, side by side
// with a NAIVE baseline: a bare Koa server (naive-server.ts, a process of its own) that verifies
// the same JWT with jose and runs one primary-key query on the same database per request, with a
// pg pool as large as the API's data-plane pool. Then PostgreSQL transactions per API request, from
// pg_stat_database. Runs on its own embedded PostgreSQL (or DATABASE_URL's server), over loopback
// only, within a time limit; stops by itself. With --profile both servers run under --cpu-prof
// (slower: compare the ratio only between runs alike), and where their CPU went is printed at the end.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import pg from 'pg';
import { startAppProcess, type AppProcess } from '@platform/test-fixtures';
import { summarizeProfiles } from './cpu-profiles.js';
import {
  audience,
  createTenant,
  createUser,
  expectStatus,
  issuer,
  provisionDatabase,
  sleep,
  startApiProcess,
  startControlPlane,
  Teardown,
  timeLimit,
  track,
} from './support.js';

/** The API's data-plane pool size (DATA_PLANE_POOL_SIZE), given to both servers. */
const POOL_SIZE = 5;
const CONNECTIONS = 50;
const WARMUP_SECONDS = 2;
const MEASURE_SECONDS = 10;
/** Sequential requests whose PostgreSQL transactions are counted. */
const COUNTED_REQUESTS = 2000;
/**
 * PostgreSQL (15+) backends publish their statistics when idle, at most once a second, else within
 * 10 s (PGSTAT_IDLE_INTERVAL): wait this long before reading pg_stat_database.
 */
const STATS_SETTLE_MS = 11_500;

const { values: flags } = parseArgs({ options: { profile: { type: 'boolean', default: false } } });
const profileDir = flags.profile ? resolve('tmp/bench-profiles', `hot-path-${new Date().toISOString().replace(/[:.]/g, '-')}`) : undefined;

/** Node flags for the server called `name`: a CPU profile written as it exits, under --profile. */
function profiled(name: string): string[] {
  return profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, name)] : [];
}

await runBenchmark();
if (profileDir) summarizeProfiles(profileDir);

function startNaiveServer(settings: { databaseUrl: string; tenantId: string; publicJwk: object }): Promise<AppProcess> {
  return startAppProcess(fileURLToPath(new URL('./naive-server.ts', import.meta.url)), {
    portVariable: 'NAIVE_PORT',
    env: {
      NAIVE_DATABASE_URL: settings.databaseUrl,
      NAIVE_TENANT_ID: settings.tenantId,
      NAIVE_PUBLIC_JWK: JSON.stringify(settings.publicJwk),
      NAIVE_POOL_SIZE: String(POOL_SIZE),
      NAIVE_ISSUER: issuer,
      NAIVE_AUDIENCE: audience,
    },
    readyPath: '/ready',
    execArgv: profiled('naive'),
    stdio: ['ignore', 'inherit', 'inherit'],
    spawned: track,
  });
}

async function load(url: string, token: string, seconds: number): Promise<Result> {
  return autocannon({ url, connections: CONNECTIONS, duration: seconds, headers: { authorization: `Bearer ${token}` } });
}

/** Fails loudly unless every response was a 2xx. */
function checkResult(name: string, result: Result): void {
  const codes = Object.entries(result.statusCodeStats)
    .map(([code, { count }]) => `${code}: ${count}`)
    .join(', ');
  if (result.non2xx !== 0 || result.errors !== 0 || result.timeouts !== 0 || result['2xx'] === 0) {
    throw new Error(`${name}: non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts} (status codes ${codes})`);
  }
}

function line(name: string, result: Result): string {
  return (
    `${name.padEnd(44)} ${result.requests.average.toFixed(0).padStart(7)} req/s` +
    `   p50 ${String(result.latency.p50).padStart(3)} ms   p99 ${String(result.latency.p99).padStart(3)} ms` +
    `   mean ${result.latency.mean.toFixed(2)} ms   requests ${result['2xx']}   non-2xx ${result.non2xx}`
  );
}

async function queryOnce<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Transactions (commits + rollbacks) of each database, read from another database. */
async function transactions(admin: pg.Client, databases: string[]): Promise<Map<string, number>> {
  const { rows } = await admin.query<{ datname: string; n: string }>(
    'select datname, xact_commit + xact_rollback as n from pg_stat_database where datname = any($1)',
    [databases],
  );
  return new Map(rows.map((row) => [row.datname, Number(row.n)]));
}

async function runBenchmark(): Promise<void> {
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const teardown = new Teardown();
  const cancelLimit = timeLimit(240, teardown.run);
  try {
    const { postgres, controlPlane } = await startControlPlane(teardown);
    const api = teardown.add(await startApiProcess(controlPlane, { LOG_LEVEL: 'error', PASSWORD_HASH_LOGN: '10', DATA_PLANE_POOL_SIZE: String(POOL_SIZE) }, profiled('api')));
    const { request } = api;
    const { developerToken, databasePath } = await provisionDatabase(controlPlane, request, { workspace: 'bench', database: 'hot' });

    // A user in 3 tenants, and 2 tenants they are not in.
    const tenants: string[] = [];
    for (const name of ['one', 'two', 'three', 'other-a', 'other-b']) tenants.push(await createTenant(request, developerToken, databasePath, name));
    const credentials = { email: 'hot-path@example.test', password: 'hot-path-password' };
    const userId = await createUser(request, developerToken, `${databasePath}/tenants/${tenants[0]}`, credentials);
    for (const tenant of tenants.slice(1, 3)) {
      expectStatus(await request('PUT', `${databasePath}/tenants/${tenant}/users/${userId}/link`, { token: developerToken }), 200, 'link user');
    }
    const login = await request('POST', `${databasePath}/users/login`, { json: credentials });
    expectStatus(login, 200, 'login');
    const token = login.body.token.jwt as string;
    const hotPath = `${databasePath}/tenants`;
    const listed = await request('GET', hotPath, { token });
    expectStatus(listed, 200, 'GET tenants');
    if (listed.body.length !== 3) throw new Error(`expected the user's 3 tenants, got ${listed.text}`);

    // The baseline reads the same database, on the same server, with the platform's signing key.
    const [{ physical_name: physicalName }] = await queryOnce<{ physical_name: string }>(
      controlPlane.url,
      `select physical_name from databases where name = 'hot' and deleted is null`,
    );
    const keys = await queryOnce<{ public_jwk: object }>(controlPlane.url, 'select public_jwk from signing_keys');
    if (keys.length !== 1) throw new Error(`expected one signing key, found ${keys.length}`);
    const controlPlaneName = new URL(controlPlane.url).pathname.slice(1);
    const naive = teardown.add(await startNaiveServer({ databaseUrl: postgres.urlFor(physicalName), tenantId: tenants[0], publicJwk: keys[0].public_jwk }));
    const naiveAnswer = await naive.request('GET', hotPath, { token });
    expectStatus(naiveAnswer, 200, 'naive GET');
    if (naiveAnswer.body[0]?.id !== tenants[0]) throw new Error(`naive answered ${naiveAnswer.text}`);

    // PostgreSQL transactions per API request in steady state (caches warm, nothing else running).
    const admin = teardown.add(new pg.Client({ connectionString: postgres.adminUrl }), (client) => client.end());
    await admin.connect();
    for (let i = 0; i < 100; i++) expectStatus(await request('GET', hotPath, { token }), 200, 'warm-up');
    const watched = [physicalName, controlPlaneName];
    await sleep(STATS_SETTLE_MS);
    const before = await transactions(admin, watched);
    const started = performance.now();
    for (let i = 0; i < COUNTED_REQUESTS; i++) {
      const answer = await request('GET', hotPath, { token });
      if (answer.status !== 200) throw new Error(`request ${i}: ${answer.status} ${answer.text}`);
    }
    const requestSeconds = (performance.now() - started) / 1000;
    await sleep(STATS_SETTLE_MS);
    const after = await transactions(admin, watched);
    const windowMs = performance.now() - started;
    // What the server does with no requests (the provisioner's polling, the locator's refresh,
    // autovacuum) over a window as long, to subtract.
    await sleep(windowMs);
    const idle = await transactions(admin, watched);

    // Throughput and latency: the API, then the baseline, one after the other.
    await load(`${api.url}${hotPath}`, token, WARMUP_SECONDS).then((result) => checkResult('API warm-up', result));
    const apiResult = await load(`${api.url}${hotPath}`, token, MEASURE_SECONDS);
    checkResult('API', apiResult);
    await load(`${naive.url}${hotPath}`, token, WARMUP_SECONDS).then((result) => checkResult('naive warm-up', result));
    const naiveResult = await load(`${naive.url}${hotPath}`, token, MEASURE_SECONDS);
    checkResult('naive baseline', naiveResult);

    console.log(`\nhot path: GET W/databases/{db}/tenants with a user token (member of 3 of 5 tenants)`);
    console.log(
      `autocannon: ${CONNECTIONS} connections, ${MEASURE_SECONDS} s each after a ${WARMUP_SECONDS} s warm-up, loopback; pg pool ${POOL_SIZE} on both` +
        (profileDir ? '; UNDER --cpu-prof' : ''),
    );
    console.log(line('API (LOG_LEVEL=error, PASSWORD_HASH_LOGN=10)', apiResult));
    console.log(line('naive Koa (jwtVerify + 1 primary-key query)', naiveResult));
    console.log(`API / naive requests/s: ${(apiResult.requests.average / naiveResult.requests.average).toFixed(2)}`);
    console.log(`\nPostgreSQL transactions per API request: ${COUNTED_REQUESTS} sequential requests in ${requestSeconds.toFixed(1)} s`);
    console.log(`(pg_stat_database xact_commit + xact_rollback deltas over ${(windowMs / 1000).toFixed(1)} s, minus the same span with no requests)`);
    for (const [label, name] of [
      ['data plane', physicalName],
      ['control plane', controlPlaneName],
    ] as const) {
      const measured = after.get(name)! - before.get(name)!;
      const background = idle.get(name)! - after.get(name)!;
      const net = Math.max(0, measured - background);
      console.log(
        `  ${`${label} (${name})`.padEnd(50)} measured ${String(measured).padStart(5)}   idle ${String(background).padStart(3)}   ` +
          `per request ${(net / COUNTED_REQUESTS).toFixed(3)} (raw ${(measured / COUNTED_REQUESTS).toFixed(3)})`,
      );
    }
  } finally {
    cancelLimit();
    await teardown.run();
  }
}

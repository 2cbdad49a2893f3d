// `npm run bench:hot-path [-- --rounds 3 --profile]`: the authenticated hot read, GET /workspaces/{ws}/databases/{db}/tenants
// with a user token (a member of 3 tenants), against the API as a separate process, side by side
// with a NAIVE baseline: a bare Koa server (naive-server.ts, a process of its own) that verifies
// the same JWT with jose and runs one primary-key query on the same database per request, with a
// pg pool as large as the API's data-plane pool. Then PostgreSQL transactions per API request, from
// pg_stat_database. Runs on its own embedded PostgreSQL (or DATABASE_URL's server), over loopback
// only, within a time limit; stops by itself. --rounds measures both servers that many times,
// alternating which goes first, and reports each round, the median ratio, and the CPU time per
// request of each server process and of its PostgreSQL backends (from /proc), which a busy machine
// disturbs far less than requests per second. With --profile both servers run under --cpu-prof
// (slower: compare the ratio only between runs alike), and where their CPU went is printed at the end.
import { mkdirSync, readFileSync } from 'node:fs';
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

const { values: options } = parseArgs({ options: { profile: { type: 'boolean', default: false }, rounds: { type: 'string', default: '3' } } });
const flags = { profile: options.profile, rounds: Number(options.rounds) };
if (!Number.isInteger(flags.rounds) || flags.rounds < 1) throw new Error(`--rounds must be a positive whole number, not '${options.rounds}'`);
const profileDir = flags.profile ? resolve('tmp/bench-profiles', `hot-path-${new Date().toISOString().replace(/[:.]/g, '-')}`) : undefined;

/** Node flags for the server called `name`: a CPU profile written as it exits, under --profile. */
function profiled(name: string): string[] {
  return profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, name)] : [];
}


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

interface Measured {
  result: Result;
  /** CPU time per request, in ms: the server process, its PostgreSQL backends, the load generator. */
  serverMs: number;
  postgresMs: number;
  driverMs: number;
}

function line(name: string, { result, serverMs, postgresMs, driverMs }: Measured): string {
  return (
    `${name.padEnd(46)} ${result.requests.average.toFixed(0).padStart(6)} req/s` +
    `   p50 ${String(result.latency.p50).padStart(3)} ms   p99 ${String(result.latency.p99).padStart(3)} ms   requests ${result['2xx']}` +
    `   CPU ms/request: server ${serverMs.toFixed(3)}  PostgreSQL ${postgresMs.toFixed(3)}  load ${driverMs.toFixed(3)}`
  );
}

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on Linux everywhere). */
const TICKS_PER_SECOND = 100;

/** User plus system CPU time of a process so far, in ms (0 once it has gone). */
function cpuMs(pid: number): number {
  try {
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
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
  const cancelLimit = timeLimit(180 + flags.rounds * 2 * (WARMUP_SECONDS + MEASURE_SECONDS + 3), teardown.run);
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

    // Throughput, latency and CPU per request: the API and the baseline in alternating order, each
    // round after a warm-up of its own, so that a busier moment of the machine falls on both alike.
    const backends = async () =>
      (await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [physicalName])).rows.map((row) => row.pid);
    const measure = async (server: AppProcess): Promise<Measured> => {
      await load(`${server.url}${hotPath}`, token, WARMUP_SECONDS).then((result) => checkResult('warm-up', result));
      const backendsBefore = new Map((await backends()).map((pid) => [pid, cpuMs(pid)]));
      const before = { server: cpuMs(server.child.pid!), driver: processCpuMs() };
      const result = await load(`${server.url}${hotPath}`, token, MEASURE_SECONDS);
      checkResult(server === api ? 'API' : 'naive baseline', result);
      // Backends that started meanwhile count from 0; one that ended meanwhile is not seen (pools keep theirs).
      const postgres = sum((await backends()).map((pid) => Math.max(0, cpuMs(pid) - (backendsBefore.get(pid) ?? 0))));
      const per = (ms: number) => ms / result['2xx'];
      return {
        result,
        serverMs: per(cpuMs(server.child.pid!) - before.server),
        postgresMs: per(postgres),
        driverMs: per(processCpuMs() - before.driver),
      };
    };
    const rounds: { api: Measured; naive: Measured }[] = [];
    for (let round = 0; round < flags.rounds; round++) {
      if (round % 2 === 0) {
        const apiRound = await measure(api);
        rounds.push({ api: apiRound, naive: await measure(naive) });
      } else {
        const naiveRound = await measure(naive);
        rounds.push({ api: await measure(api), naive: naiveRound });
      }
    }

    console.log(`\nhot path: GET W/databases/{db}/tenants with a user token (member of 3 of 5 tenants)`);
    console.log(
      `autocannon: ${CONNECTIONS} connections, ${flags.rounds} rounds of ${MEASURE_SECONDS} s each after a ${WARMUP_SECONDS} s warm-up, ` +
        `alternating which goes first, loopback; pg pool ${POOL_SIZE} on both${profileDir ? '; UNDER --cpu-prof' : ''}`,
    );
    console.log('CPU per request (ms): of the server process, of its PostgreSQL backends, of the load generator (this process)');
    rounds.forEach(({ api: a, naive: n }, i) => {
      console.log(`round ${i + 1}`);
      console.log(line('  API (LOG_LEVEL=error, PASSWORD_HASH_LOGN=10)', a));
      console.log(line('  naive Koa (jwtVerify + 1 primary-key query)', n));
      console.log(`  API / naive requests/s: ${(a.result.requests.average / n.result.requests.average).toFixed(2)}`);
    });
    const ratios = rounds.map(({ api: a, naive: n }) => a.result.requests.average / n.result.requests.average);
    const medianOf = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)];
    const cpuRatio = medianOf(rounds.map(({ api: a, naive: n }) => (n.serverMs + n.postgresMs) / (a.serverMs + a.postgresMs)));
    console.log(`API / naive requests/s, median of ${rounds.length}: ${medianOf(ratios).toFixed(2)} (each: ${ratios.map((r) => r.toFixed(2)).join(', ')})`);
    console.log(`naive / API CPU per request (server + PostgreSQL), median: ${cpuRatio.toFixed(2)}`);
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

// Last: the module's constants above exist by now.
await runBenchmark();
if (profileDir) summarizeProfiles(profileDir);

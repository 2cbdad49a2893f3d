// `npm run bench:pooling [-- --quick] [-- --seconds 10 --warmup 0 --clients 50,200,500,1000
//   --workloads select-only,tpcb-like --protocols simple,prepared --scale 10 --pool-size 20
//   --targets direct,pgbouncer,gateway-session,gateway-pooled --gateway-workers 2 --profile]`:
// what transaction pooling buys (issue 30, docs/gateway-pooling.md). pgbench 18 (tools/pg-client-tools.mjs)
// at many clients against, one after another:
//   direct            the cluster's port: one server backend per client
//   pgbouncer         PgBouncer 1.21+ (tools/pgbouncer.mjs), pool_mode=transaction, default_pool_size
//                     --pool-size, max_prepared_statements (protocol-level prepared statements kept across
//                     server connections)
//   gateway-session   apps/gateway as it is: one client session relayed to one server session
//   gateway-pooled    our pooled endpoint (GATEWAY_POOLED_PORT, GATEWAY_POOL_SIZE=--pool-size, idle server
//                     connections closed after 2 s as PgBouncer's here)
//   node-relay        a bare Node TCP relay to the cluster (node-relay.ts): one server backend per client,
//                     bytes copied both ways and nothing else; its CPU per transaction is the floor under any
//                     pooler written for Node, the figure the pooled endpoint's own is compared with
// Each run is --seconds long (after an optional --warmup of the same shape), plus time for pgbench to
// connect its clients, which its TPS leaves out; every transaction is logged (pgbench --log), which
// gives exact percentiles; the target's server backends (sessions of the credential's role in
// pg_stat_activity) are sampled every 250 ms meanwhile (the mean includes the connecting time: read the
// most). A run that fails (refused connections, errors) is reported as such and the bench goes on.
// TPC-B-like with -M prepared is not run through PgBouncer: pgbench deadlocks there (POOLED_PREPARE_STALL);
// the gateway's pooled endpoint answers a known Parse without a server connection and runs it. --quick: 50 and 500 clients, 5 s runs (about 5 minutes on 2 cores); the
// full run about 15 (both on a busy machine).
// Setup: an embedded PostgreSQL of its own with max_connections above the most clients (the bench's
// server settings), a control plane, apps/api as a process to provision a database and an unscoped
// credential (stopped before measuring; the credential's and the database's connection limits are
// then lifted so that direct clients are not refused), pgbench -i -s --scale as the credential.
// Loopback only; stops everything it started by itself (time limit, Ctrl-C, failure). Exits 0 when
// every run finished, 1 otherwise. On demand only: never part of the test suite.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { readExtensionsDir } from '@platform/config';
import { MANY_DATABASES_SETTINGS, scratchDir, startEmbeddedPostgres } from '@platform/postgres-launcher';
import { createTestControlPlane } from '@platform/test-fixtures';
import { freePort, query, type TestPostgres } from '@platform/testing';
import { summarizeProfiles } from './cpu-profiles.js';
import { initialisePgbench, processCpuMs, runPgbench, WORKLOADS, type PgbenchRun, type Target, type Workload } from './gateway-pgbench.js';
import { startNodeRelay, startPgbouncer } from './gateway-pgbouncer.js';
import { audience, expectStatus, issuer, provisionDatabase, runBench, sleep, startApiProcess, startGatewayApp, Teardown } from './support.js';

const root = resolve(import.meta.dirname, '../..');
const PGBENCH = join(root, '.data/pg-client-18/bin/pgbench');
const PGBOUNCER = join(root, '.data/pgbouncer/bin/pgbouncer');
/** Named prepared statements PgBouncer keeps per server connection (pgbench -M prepared uses 1-7 a script). */
const MAX_PREPARED_STATEMENTS = 200;
/** PgBouncer closes its idle server connections this soon, so that the next target starts with none. */
const PGBOUNCER_SERVER_IDLE_SECONDS = 2;
/** How many clients a run expects pgbench to connect per second at least (seen: about 100 through the gateway, loaded machine). */
const CLIENTS_CONNECTED_PER_SECOND = 50;
/** Server sessions beyond the clients: the control plane, the gateway's own, the sampler, superusers. */
const SERVER_HEADROOM = 100;

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    warmup: { type: 'string' },
    clients: { type: 'string' },
    workloads: { type: 'string', default: WORKLOADS.map((w) => w.script).join(',') },
    protocols: { type: 'string', default: 'simple,prepared' },
    scale: { type: 'string', default: '10' },
    'pool-size': { type: 'string', default: '20' },
    targets: { type: 'string', default: 'direct,pgbouncer,node-relay,gateway-session,gateway-pooled' },
    /** GATEWAY_WORKERS for the gateway; its own default (the cores, at most 8) unless given. */
    'gateway-workers': { type: 'string' },
    /** The gateway's processes write CPU profiles (node --cpu-prof), summarised at the end. */
    profile: { type: 'boolean', default: false },
  },
});
const settings = {
  seconds: positive('seconds', flags.seconds ?? (flags.quick ? '5' : '10')),
  warmup: whole('warmup', flags.warmup ?? '0'),
  clients: (flags.clients ?? (flags.quick ? '50,500' : '50,200,500,1000')).split(',').map((value) => positive('clients', value)),
  workloads: flags.workloads.split(',').map(workloadNamed),
  protocols: flags.protocols.split(',').map((value) => oneOf('protocols', value, ['simple', 'extended', 'prepared'])),
  scale: positive('scale', flags.scale),
  poolSize: positive('pool-size', flags['pool-size']),
  gatewayWorkers: flags['gateway-workers'] === undefined ? null : positive('gateway-workers', flags['gateway-workers']),
  targets: new Set(flags.targets.split(',').map((value) => oneOf('targets', value, ['direct', 'pgbouncer', 'node-relay', 'gateway-session', 'gateway-pooled']))),
};

function whole(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new Error(`--${name} must be a whole number, got '${value}'`);
  return parsed;
}

function positive(name: string, value: string): number {
  const parsed = whole(name, value);
  if (parsed < 1) throw new Error(`--${name} must be a positive integer, got '${value}'`);
  return parsed;
}

function workloadNamed(script: string): Workload {
  const found = WORKLOADS.find((workload) => workload.script === script);
  if (!found) throw new Error(`--workloads takes ${WORKLOADS.map((workload) => workload.script).join(', ')}, got '${script}'`);
  return found;
}

function oneOf(name: string, value: string, allowed: string[]): string {
  if (!allowed.includes(value)) throw new Error(`--${name} takes ${allowed.join(', ')}, got '${value}'`);
  return value;
}

type TargetKey = 'direct' | 'pgbouncer' | 'node-relay' | 'gateway-session' | 'gateway-pooled';
const LABELS: Record<TargetKey, string> = {
  direct: 'direct',
  pgbouncer: `PgBouncer transaction, pool ${settings.poolSize}`,
  'node-relay': 'bare Node relay',
  'gateway-session': 'gateway session mode',
  'gateway-pooled': `gateway pooled, pool ${settings.poolSize}`,
};

interface Row {
  workload: Workload;
  protocol: string;
  clients: number;
  key: TargetKey;
  run?: PgbenchRun;
  /** Sessions of the credential's role on the server during the run: the most seen, and the mean of the samples. */
  backends?: { max: number; mean: number };
  error?: string;
  /** Why the run was not made. */
  skipped?: string;
  /** CPU time the pooler's processes (PgBouncer, the gateway and its workers) spent per transaction once its clients were connected, in µs. */
  cpuMicrosPerTransaction?: number;
}

/**
 * The pooler's CPU over a window of the run once its clients are connected (from `fromMs` after now,
 * for `lengthMs`): logins are left out, as pgbench leaves them out of its TPS.
 */
async function measureCpuWindow(pid: number, fromMs: number, lengthMs: number): Promise<{ startMs: number; endMs: number; cpuSeconds: number }> {
  await sleep(fromMs);
  const startMs = Date.now();
  const before = cpuSecondsOfTree(pid);
  await sleep(lengthMs);
  return { startMs, endMs: Date.now(), cpuSeconds: cpuSecondsOfTree(pid) - before };
}

/** µs of the pooler's CPU per transaction that ended within the window; undefined when none did. */
function cpuPerTransaction(window: { startMs: number; endMs: number; cpuSeconds: number }, run: PgbenchRun): number | undefined {
  let ended = 0;
  for (const at of run.endedAtMs) if (at >= window.startMs && at < window.endMs) ended++;
  return ended > 0 ? (window.cpuSeconds * 1e6) / ended : undefined;
}

/** CPU seconds (user and system) spent so far by a process and every process below it. */
function cpuSecondsOfTree(root: number): number {
  const spent = processCpuMs(root);
  return spent === null ? 0 : (spent.user + spent.system) / 1000;
}

/**
 * pgbench -M prepared prepares each statement on its first use with libpq's synchronous PQprepare,
 * which blocks its whole thread (-j 2: hundreds of clients each) until the server answers. Through a
 * transaction pool the Parse of BEGIN, sent outside a transaction, waits for a free server
 * connection; when the pool's connections are all held mid-transaction by clients of blocked
 * threads, nobody moves (seen with PgBouncer 1.24: every run stalled until killed). Select-only
 * has no multi-statement transaction and runs.
 */
const POOLED_PREPARE_STALL = 'pgbench prepares with a blocking PQprepare per thread: a TPC-B-like run through a transaction pool deadlocks (see pooling.ts)';

/**
 * The gateway's pooled endpoint answers a Parse of a text the pool has parsed before (and the Sync
 * after it) without a server connection, so only a pool's cold start can stall that way: it runs.
 */
function skipReason(key: TargetKey, workload: Workload, protocol: string): string | undefined {
  return key === 'pgbouncer' && workload.script === 'tpcb-like' && protocol === 'prepared' ? POOLED_PREPARE_STALL : undefined;
}

const teardown = new Teardown();
const profileDir = flags.profile ? resolve('tmp/bench-profiles', `pooling-${new Date().toISOString().replace(/[:.]/g, '-')}`) : undefined;

/** apps/gateway has a pooled endpoint once its configuration reads GATEWAY_POOLED_PORT. */
function gatewayHasPooledPort(): boolean {
  const config = join(root, 'apps/gateway/src/config.ts');
  return existsSync(config) && readFileSync(config, 'utf8').includes('GATEWAY_POOLED_PORT');
}

/** An embedded PostgreSQL of this bench's own, with room for every direct client. */
async function startServer(maxClients: number): Promise<TestPostgres> {
  const dir = scratchDir('bench-pooling-pg-');
  const server = await startEmbeddedPostgres({
    dir,
    port: await freePort(),
    extensionsDir: readExtensionsDir(process.env),
    settings: { ...MANY_DATABASES_SETTINGS, max_connections: String(maxClients + SERVER_HEADROOM) },
  });
  return {
    adminUrl: server.url('postgres'),
    urlFor: (database) => server.url(database),
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Samples the role's sessions on the server every 250 ms until stopped. */
function sampleBackends(admin: pg.Client, role: string): { stop(): Promise<{ max: number; mean: number }> } {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where usename = $1', [role]);
      samples.push(rows[0].n);
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      const max = Math.max(0, ...samples);
      return { max, mean: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : 0 };
    },
  };
}

/** Waits until the role holds no session (PgBouncer's idle pool, backends still closing). */
async function waitForNoSessions(admin: pg.Client, role: string): Promise<void> {
  for (let waited = 0; waited < 60_000; waited += 200) {
    const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where usename = $1', [role]);
    if (rows[0].n === 0) return;
    await sleep(200);
  }
  throw new Error(`sessions of ${role} are still open a minute after the run`);
}

/** node-postgres logs in through the target and lands in the database's physical name, or the bench stops here. */
async function checkTarget(key: TargetKey, target: Target, physicalName: string): Promise<void> {
  const client = new pg.Client({ host: target.host, port: target.port, user: target.user, password: target.password, database: target.database, ssl: false });
  await client.connect();
  try {
    const { rows } = await client.query<{ here: string }>('select current_database() as here');
    if (rows[0].here !== physicalName) throw new Error(`${LABELS[key]} leads to ${rows[0].here}, not ${physicalName}`);
  } finally {
    await client.end();
  }
}

const format = {
  tps: (value: number) => value.toLocaleString('en-US', { maximumFractionDigits: 0 }),
  ms: (value: number) => (Number.isFinite(value) ? value.toFixed(1) : ''),
};

function report(rows: Row[], skipped: string | null): void {
  console.log(`\n## Pooling benchmark: pgbench 18, scale ${settings.scale}, ${settings.seconds} s a run (warm-up ${settings.warmup} s), -j 2, loopback, 2 cores\n`);
  console.log('Backends: sessions of the credential\'s role on the server during the run (sampled every 250 ms), most seen (mean).');
  if (skipped) console.log(`Skipped: ${skipped}`);
  console.log('Pooler CPU: what PgBouncer or the gateway (all its processes) spent per transaction once the clients were connected (logins left out): the figure the load on the machine moves least.');
  console.log('\n| workload | protocol | clients | target | TPS | p50 ms | p99 ms | backends max (mean) | pooler CPU µs/tx | vs direct | vs PgBouncer | CPU vs relay |');
  console.log('| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) {
    const peer = (key: TargetKey) => rows.find((r) => r.key === key && r.workload === row.workload && r.protocol === row.protocol && r.clients === row.clients);
    const direct = peer('direct')?.run;
    const bouncer = peer('pgbouncer')?.run;
    const relayCpu = peer('node-relay')?.cpuMicrosPerTransaction;
    const versus = [
      bouncer && row.run && row.key !== 'pgbouncer' && row.key !== 'direct' ? `${(row.run.tps / bouncer.tps).toFixed(2)}x` : '',
      relayCpu && row.cpuMicrosPerTransaction !== undefined && row.key !== 'node-relay' ? `${(row.cpuMicrosPerTransaction / relayCpu).toFixed(2)}x` : '',
    ];
    const cells = row.skipped
      ? ['skipped (pgbench deadlocks on a pool, see pooling.ts)', '', '', '', '', '', '', '']
      : row.run
      ? [format.tps(row.run.tps), format.ms(row.run.p50Ms), format.ms(row.run.p99Ms), `${row.backends?.max ?? ''} (${row.backends?.mean.toFixed(0) ?? ''})`, row.cpuMicrosPerTransaction?.toFixed(0) ?? '', direct && row.key !== 'direct' ? `${(row.run.tps / direct.tps).toFixed(2)}x` : '', ...versus]
      : [`failed: ${row.error}`, '', '', row.backends ? `${row.backends.max} (${row.backends.mean.toFixed(0)})` : '', '', '', '', ''];
    console.log(`| ${row.workload.name} | ${row.protocol} | ${row.clients} | ${LABELS[row.key]} | ${cells.join(' | ')} |`);
  }
}

const maxClients = Math.max(...settings.clients);
const runs = settings.workloads.length * settings.protocols.length * settings.clients.length * 5;
await runBench(600 + settings.scale * 20 + runs * (settings.warmup + settings.seconds + 60), teardown, async () => {
  for (const [what, program, tool] of [['pgbench 18', PGBENCH, 'pg-client-tools'], ['PgBouncer 1.21+', PGBOUNCER, 'pgbouncer']]) {
    if (!existsSync(program)) throw new Error(`${what} is not in ${program}: run node tools/${tool}.mjs first`);
  }
  const scratch = teardown.add(mkdtempSync(join(tmpdir(), 'bench-pooling-')), async (dir) => rmSync(dir, { recursive: true, force: true }));
  const postgres = teardown.add(await startServer(maxClients));
  const controlPlane = teardown.add(await createTestControlPlane(postgres, { issuer, audience }), (plane) => plane.close());

  const api = teardown.add(await startApiProcess(controlPlane, { LOG_LEVEL: 'error', PASSWORD_HASH_LOGN: '10' }));
  const databaseName = 'pgbench';
  const { developerToken, databasePath } = await provisionDatabase(controlPlane, api.request, { workspace: 'bench-pooling', database: databaseName });
  const created = await api.request('POST', `${databasePath}/credentials`, { token: developerToken });
  expectStatus(created, 201, 'create credential');
  const credential = created.body as { id: string; password: string };
  await api.stop();
  const [{ physical_name: physicalName }] = await query<{ physical_name: string }>(controlPlane.url, 'select physical_name from databases where name = $1 and deleted is null', [
    databaseName,
  ]);
  const admin = teardown.add(new pg.Client({ connectionString: postgres.adminUrl }), (client) => client.end());
  await admin.connect();
  // The platform's limits (100 sessions a credential and a database) would refuse direct clients past 100.
  await admin.query(`alter role "${credential.id}" connection limit -1`);
  await admin.query(`alter database "${physicalName}" connection limit -1`);
  const cluster = new URL(postgres.adminUrl);
  const as = { user: credential.id, password: credential.password };

  const pooled = gatewayHasPooledPort();
  const ports = { session: await freePort(), pooled: await freePort() };
  // Idle server connections close after 2 s, as PgBouncer's here, so that the next target starts with none.
  const pooledEnv: Record<string, string> = pooled
    ? { GATEWAY_POOLED_PORT: String(ports.pooled), GATEWAY_POOL_SIZE: String(settings.poolSize), GATEWAY_POOL_IDLE_MS: String(PGBOUNCER_SERVER_IDLE_SECONDS * 1000) }
    : {};
  if (profileDir) mkdirSync(join(profileDir, 'gateway'), { recursive: true });
  const workers: Record<string, string> = settings.gatewayWorkers === null ? {} : { GATEWAY_WORKERS: String(settings.gatewayWorkers) };
  const gateway = await startGatewayApp(controlPlane, ports.session, { GATEWAY_ALLOW_PLAIN: 'true', ...pooledEnv, ...workers }, profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, 'gateway')] : []);
  teardown.add(gateway);
  const bouncer = teardown.add(
    await startPgbouncer({
      program: PGBOUNCER,
      name: databaseName,
      server: { host: cluster.hostname, port: Number(cluster.port), database: physicalName },
      ...as,
      poolSize: settings.poolSize,
      poolMode: 'transaction',
      maxClientConn: maxClients + SERVER_HEADROOM,
      serverIdleSeconds: PGBOUNCER_SERVER_IDLE_SECONDS,
      extra: { max_prepared_statements: String(MAX_PREPARED_STATEMENTS) },
    }),
  );

  const relay = teardown.add(await startNodeRelay({ host: cluster.hostname, port: Number(cluster.port) }));

  const local = (port: number): Target => ({ host: '127.0.0.1', port, database: databaseName, tls: false, ...as });
  const targets: [TargetKey, Target][] = [
    ['direct', { host: cluster.hostname, port: Number(cluster.port), database: physicalName, tls: false, ...as }],
    ['pgbouncer', local(bouncer.port)],
    ['node-relay', { host: '127.0.0.1', port: relay.port, database: physicalName, tls: false, ...as }],
    ['gateway-session', local(ports.session)],
  ];
  if (pooled) targets.push(['gateway-pooled', local(ports.pooled)]);
  const skipped = pooled ? null : `${LABELS['gateway-pooled']}: apps/gateway has no GATEWAY_POOLED_PORT yet (issue 30); its column comes once it does.`;
  if (skipped) console.log(skipped);
  for (const [key, target] of targets) await checkTarget(key, target, physicalName);

  const started = performance.now();
  await initialisePgbench(targets[0][1], settings.scale, PGBENCH);
  await admin.query('checkpoint');
  console.log(`pgbench -i -s ${settings.scale} as the credential, direct: ${((performance.now() - started) / 1000).toFixed(1)} s; load average before the runs ${loadavg().map((v) => v.toFixed(1)).join(' ')}`);

  const rows: Row[] = [];
  for (const workload of settings.workloads) {
    for (const protocol of settings.protocols) {
      for (const clients of settings.clients) {
        for (const [key, target] of targets) {
          if (!settings.targets.has(key)) continue;
          const row: Row = { workload, protocol, clients, key, skipped: skipReason(key, workload, protocol) };
          rows.push(row);
          if (row.skipped) {
            console.log(`${workload.name.padEnd(11)} ${protocol.padEnd(8)} c=${String(clients).padStart(4)} ${LABELS[key].padEnd(34)} skipped: ${row.skipped}`);
            continue;
          }
          await waitForNoSessions(admin, credential.id);
          // pgbench's -T counts from before its clients connect (a few ms each through a proxy on 2 busy cores):
          // each run gets that time on top, and pgbench's TPS leaves it out. A run that stalls is ended after a minute more.
          const connecting = Math.ceil(clients / CLIENTS_CONNECTED_PER_SECOND);
          const shape = { workload, clients, protocol, program: PGBENCH, limitSeconds: settings.seconds + connecting + 60 };
          const sampler = { current: null as ReturnType<typeof sampleBackends> | null };
          try {
            if (settings.warmup > 0) await runPgbench(target, { ...shape, seconds: settings.warmup + connecting });
            sampler.current = sampleBackends(admin, credential.id);
            const pooler = key === 'pgbouncer' ? bouncer.pid : key === 'node-relay' ? relay.pid : key.startsWith('gateway') ? gateway.child.pid! : null;
            const window = pooler === null ? null : measureCpuWindow(pooler, connecting * 1000, settings.seconds * 800);
            row.run = await runPgbench(target, { ...shape, seconds: settings.seconds + connecting, logPrefix: join(scratch, `${workload.script}-${protocol}-${clients}-${key}`) });
            if (window) row.cpuMicrosPerTransaction = cpuPerTransaction(await window, row.run);
            if (row.run.failed > 0) row.error = `${row.run.failed} transactions failed`;
          } catch (error) {
            row.error = firstLine(error);
            console.error(`${LABELS[key]}, ${workload.name} ${protocol} c=${clients}: ${String(error instanceof Error ? error.message : error).slice(0, 3000)}`);
          }
          if (sampler.current) row.backends = await sampler.current.stop();
          const { run } = row;
          console.log(
            `${workload.name.padEnd(11)} ${protocol.padEnd(8)} c=${String(clients).padStart(4)} ${LABELS[key].padEnd(34)} ` +
              (run ? `${format.tps(run.tps).padStart(7)} tps  p50 ${format.ms(run.p50Ms)}  p99 ${format.ms(run.p99Ms)} ms` : `failed: ${row.error}`) +
              `  backends ${row.backends?.max ?? '-'} (mean ${row.backends?.mean.toFixed(0) ?? '-'})` +
              (row.cpuMicrosPerTransaction === undefined ? '' : `  pooler CPU ${row.cpuMicrosPerTransaction.toFixed(0)} µs/tx`) +
              `  load ${loadavg()[0].toFixed(1)}`,
          );
        }
      }
    }
  }
  report(rows, skipped);
  if (profileDir) {
    // The gateway's processes write their profiles as they exit.
    await gateway.stop();
    summarizeProfiles(profileDir);
  }
  return rows.every((row) => row.skipped || (row.run && !row.error));
});

/** An error's first meaningful line (pgbench's own message after its command line). */
function firstLine(error: unknown): string {
  const lines = String(error instanceof Error ? error.message : error).split('\n').map((line) => line.trim()).filter(Boolean);
  return (lines.find((line) => /error|fatal|abort|refused|timeout/i.test(line) && !line.startsWith('pgbench -b')) ?? lines[0] ?? 'unknown').slice(0, 160);
}

// `npm run bench:idle-clients [-- --clients 10000 --probes 20 --tls]`: what an idle client costs the
// gateway (issue 30: under 10 kB each with 10,000 held, and a legitimate login still served in under
// 100 ms). One gateway process (GATEWAY_WORKERS=1, so that its memory is all of it) with its pooled
// endpoint; --clients node-postgres clients log in there (plain, or TLS with --tls) and stay idle,
// having run one query each (their pool's server sessions are given back at once: idle clients hold
// none). Reported: the gateway's resident memory (VmRSS from /proc) before and after, per client; the server sessions the credential holds meanwhile; and --probes logins of a new client
// with its first query, one after another, while the idle ones are held (median, p99, max).
// --heap-snapshot: the gateway also writes a V8 heap snapshot at both points (SIGUSR2, into a temporary
// folder), and the object kinds that grew are listed per client (heap-summary.ts).
// Setup: an embedded PostgreSQL, a control plane, apps/api (a database and a credential), stopped
// before measuring. Loopback only; stops everything it started, within its time limit. On demand only.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ensureDevelopmentCertificates } from '@platform/dev-tls';
import { freePort, query } from '@platform/testing';
import { compareHeaps } from './heap-summary.js';
import { expectStatus, percentile, provisionDatabase, runBench, sleep, startApiProcess, startControlPlane, startGatewayApp, Teardown } from './support.js';

const { values: flags } = parseArgs({
  options: {
    clients: { type: 'string', default: '10000' },
    probes: { type: 'string', default: '20' },
    tls: { type: 'boolean', default: false },
    'heap-snapshot': { type: 'boolean', default: false },
  },
});
const clients = Number(flags.clients);
const probes = Number(flags.probes);
if (!Number.isInteger(clients) || clients < 1 || !Number.isInteger(probes) || probes < 1) throw new Error('--clients and --probes are whole numbers above 0');
/** Logins started at once while the idle clients connect (the gateway's caps on logins in progress are raised to match). */
const BATCH = 50;

/** Resident memory of a process in kB (VmRSS). */
function residentKb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? NaN);
}

const teardown = new Teardown();
await runBench(20 * 60, teardown, async () => {
  const { postgres, controlPlane } = await startControlPlane(teardown);
  const port = await freePort();
  const pooledPort = await freePort();
  const common = {
    GATEWAY_POOLED_PORT: String(pooledPort),
    GATEWAY_POOLED_PUBLIC_URL: `postgres://localhost:${pooledPort}`,
    GATEWAY_PUBLIC_URL: `postgres://localhost:${port}`,
  };
  const api = teardown.add(await startApiProcess(controlPlane, { ...common, LOG_LEVEL: 'error' }), (app) => app.stop());
  const { developerToken, databasePath } = await provisionDatabase(controlPlane, api.request, { workspace: 'idle-bench', database: 'idle' });
  const created = await api.request('POST', `${databasePath}/credentials`, { token: developerToken });
  expectStatus(created, 201, 'create credential');
  await api.stop();
  const pooled = new URL(created.body.pooledConnectionUrl as string);
  const certificates = teardown.add(mkdtempSync(join(tmpdir(), 'bench-idle-tls-')), async (dir) => rmSync(dir, { recursive: true, force: true }));
  if (flags['heap-snapshot']) mkdirSync(resolve('tmp'), { recursive: true });
  // Kept (tmp/ of the repository, as bench:soak's) for a closer look in DevTools.
  const snapshots = flags['heap-snapshot'] ? mkdtempSync(join(resolve('tmp'), 'bench-idle-heap-')) : null;
  const tls = flags.tls ? await ensureDevelopmentCertificates(certificates, ['localhost', '127.0.0.1']) : null;
  const gateway = teardown.add(
    await startGatewayApp(controlPlane, port, {
      ...common,
      GATEWAY_WORKERS: '1',
      ...(tls ? { GATEWAY_TLS_CERT: tls.serverCert, GATEWAY_TLS_KEY: tls.serverKey } : { GATEWAY_ALLOW_PLAIN: 'true' }),
      GATEWAY_MAX_CONNECTIONS: String(clients + probes + 100),
      GATEWAY_MAX_LOGINS_PER_ADDRESS: String(BATCH * 2),
      GATEWAY_MAX_LOGINS_PER_USER: String(BATCH * 2),
      GATEWAY_MAX_LOGINS_PER_USER_ADDRESS: String(BATCH * 2),
    }, snapshots ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshots}`] : []),
    (app) => app.stop(),
  );
  const gatewayPid = gateway.child.pid!;
  const connectOptions: pg.ClientConfig = {
    host: '127.0.0.1',
    port: pooledPort,
    user: decodeURIComponent(pooled.username),
    password: decodeURIComponent(pooled.password),
    database: decodeURIComponent(pooled.pathname.slice(1)),
    ssl: tls ? { ca: readFileSync(tls.caCert, 'utf8'), servername: 'localhost' } : false,
  };
  const connect = async () => {
    const client = new pg.Client(connectOptions);
    client.on('error', () => {});
    await client.connect();
    await client.query('select 1');
    return client;
  };
  // Warm: the pool's server sessions exist and the verifier is cached before the baseline.
  const warm = await Promise.all(Array.from({ length: 5 }, connect));
  await Promise.all(warm.map((client) => client.end()));
  await sleep(2_000);
  const before = residentKb(gatewayPid);
  /** Has the gateway write a heap snapshot, and answers its file once written (the gateway answers again only then). */
  const heapSnapshot = async (): Promise<string | null> => {
    if (!snapshots) return null;
    const count = readdirSync(snapshots).length;
    process.kill(gatewayPid, 'SIGUSR2');
    for (let waited = 0; ; waited += 500) {
      if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) throw new Error(`the gateway ended on its heap snapshot (${gateway.child.signalCode ?? gateway.child.exitCode})`);
      if (waited > 300_000) throw new Error('no heap snapshot within 5 minutes');
      await sleep(500);
      const files = readdirSync(snapshots).filter((name) => name.endsWith('.heapsnapshot'));
      if (files.length > count && (await gateway.request('GET', '/healthz').catch(() => undefined))?.status === 200) return join(snapshots, files.sort()[files.length - 1]);
    }
  };
  const heapBefore = await heapSnapshot();

  const held: pg.Client[] = [];
  const started = Date.now();
  for (let i = 0; i < clients; i += BATCH) {
    held.push(...(await Promise.all(Array.from({ length: Math.min(BATCH, clients - i) }, connect))));
    if (i % 1000 === 0) process.stdout.write(`\r${held.length} clients logged in`);
  }
  const loginSeconds = (Date.now() - started) / 1000;
  await sleep(5_000);
  const after = residentKb(gatewayPid);
  const heapAfter = await heapSnapshot();
  const role = decodeURIComponent(pooled.username);
  const [{ n: serverSessions }] = await query<{ n: number }>(postgres.adminUrl, 'select count(*)::int as n from pg_stat_activity where usename = $1', [role]);

  const probeMs: number[] = [];
  for (let i = 0; i < probes; i++) {
    const start = process.hrtime.bigint();
    const client = await connect();
    probeMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    await client.end();
  }
  probeMs.sort((a, b) => a - b);
  const perClient = ((after - before) * 1024) / clients;
  console.log(`\n
idle clients through the pooled endpoint (${tls ? 'TLS' : 'plain'}), one gateway process
  clients held          ${held.length} (logged in ${loginSeconds.toFixed(1)} s, ${(held.length / loginSeconds).toFixed(0)}/s, ${BATCH} at a time)
  gateway RSS           ${(before / 1024).toFixed(1)} MB before, ${(after / 1024).toFixed(1)} MB after
  per idle client       ${(perClient / 1024).toFixed(2)} kB (goal: under 10 kB)
  server sessions       ${serverSessions} of the credential's role while they are held
  a new login + query   median ${percentile(probeMs, 50).toFixed(1)} ms, p99 ${percentile(probeMs, 99).toFixed(1)} ms, max ${probeMs[probeMs.length - 1].toFixed(1)} ms over ${probes} (goal: under 100 ms)`);
  if (heapBefore && heapAfter) console.log(`\nheap snapshots in ${snapshots}\n${compareHeaps(heapBefore, heapAfter, held.length).join('\n')}`);
  await Promise.all(held.map((client) => client.end().catch(() => {})));
  return perClient < 10 * 1024 && probeMs[probeMs.length - 1] < 100;
});

// `npm run bench:compute [-- --rounds 10 --scale 10 --seconds 15]`: dedicated compute, measured on
// the running platform (API and gateway as their own processes, an embedded PostgreSQL, loopback only):
//   1. POST D/compute -> READY and PUT (resize) -> READY, p50 and p99 over `rounds` instances;
//   2. the write pause while a database moves onto an instance and back: a client writes through
//      the gateway without stop (reconnecting when its session is ended), and the longest gap
//      between two committed writes is the pause, for an empty database and a pgbench one;
//   3. the same pgbench runs through the gateway before and after the pgbench database moves to a
//      large instance, with the ratio.
// Stops by itself (a time limit); removes what it made.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { eventually, freePort, scratchDir } from '@platform/testing';
import { startAppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { initialisePgbench, runPgbench, WORKLOADS, type Target } from './gateway-pgbench.js';
import { expectStatus, percentile, provisionDatabase, startApiProcess, startControlPlane, Teardown, timeLimit, track, type Request } from './support.js';

const { values: flags } = parseArgs({
  options: { rounds: { type: 'string', default: '10' }, scale: { type: 'string', default: '10' }, seconds: { type: 'string', default: '15' } },
});
const ROUNDS = Number(flags.rounds);
const SCALE = Number(flags.scale);
const SECONDS = Number(flags.seconds);

const teardown = new Teardown();
const done = timeLimit(1800, teardown.run);

function stats(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms (n=${sorted.length}, min ${sorted[0].toFixed(0)}, max ${sorted[sorted.length - 1].toFixed(0)})`;
}

async function untilStatus(request: Request, token: string, path: string, status: string, typeId?: string): Promise<void> {
  await eventually(
    async () => {
      const found = await request('GET', path, { token });
      if (found.body?.status === 'FAILED') throw new Error(`FAILED: ${found.body.failure}`);
      return found.body?.status === status && (!typeId || found.body.instanceType.id === typeId) ? true : undefined;
    },
    600_000,
    `${path} ${status}`,
  );
}

/** A database with a credential, reached through the gateway. */
async function databaseWithCredential(controlPlane: TestControlPlane, request: Request, name: string, gatewayPort: number) {
  const { developerToken: token, databasePath } = await provisionDatabase(controlPlane, request, { workspace: `ws-${name.replace(/_/g, '-')}`, database: name });
  const created = await request('POST', `${databasePath}/credentials`, { token });
  expectStatus(created, 201, 'create credential');
  const target: Target = { host: '127.0.0.1', port: gatewayPort, user: created.body.id, password: created.body.password, database: name, tls: false };
  return { token, databasePath, target };
}

/**
 * Writes through the gateway without stop while `during` runs; answers the longest time between two
 * committed writes (the pause clients see), and how many writes failed and were retried.
 */
async function writePause(target: Target, during: () => Promise<void>): Promise<{ pauseMs: number; writes: number; failures: number }> {
  const connect = async () => {
    const client = new pg.Client({ ...target, ssl: false, connectionTimeoutMillis: 30_000 });
    client.on('error', () => {});
    await client.connect();
    return client;
  };
  const setup = await connect();
  await setup.query('create table if not exists bench_writes (id bigserial primary key, at timestamptz not null default now())');
  await setup.end();
  let stop = false;
  let last = performance.now();
  let longest = 0;
  let writes = 0;
  let failures = 0;
  const writer = (async () => {
    let client: pg.Client | null = null;
    while (!stop) {
      try {
        client ??= await connect();
        await client.query('insert into bench_writes default values');
        const now = performance.now();
        longest = Math.max(longest, now - last);
        last = now;
        writes++;
      } catch {
        failures++;
        await client?.end().catch(() => undefined);
        client = null;
      }
    }
    await client?.end().catch(() => undefined);
  })();
  await new Promise((resolve) => setTimeout(resolve, 500));
  await during();
  await new Promise((resolve) => setTimeout(resolve, 500));
  stop = true;
  await writer;
  return { pauseMs: longest, writes, failures };
}

try {
  const { controlPlane } = await startControlPlane(teardown);
  const computeDir = scratchDir('platform-bench-compute-');
  teardown.add(computeDir, async (dir) => rmSync(dir, { recursive: true, force: true }));
  const gatewayPort = await freePort();
  const env = { LOG_LEVEL: 'error', COMPUTE_DIR: computeDir, COMPUTE_RECONCILE_MS: '100', GATEWAY_PORT: String(gatewayPort), GATEWAY_PUBLIC_URL: `postgres://127.0.0.1:${gatewayPort}` };
  const { request } = teardown.add(await startApiProcess(controlPlane, env));
  teardown.add(
    await startAppProcess('apps/gateway/src/main.ts', {
      portVariable: 'GATEWAY_ADMIN_PORT',
      env: { DATABASE_URL: controlPlane.url, GATEWAY_HOST: '127.0.0.1', GATEWAY_ALLOW_PLAIN: 'true', ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
      spawned: track,
    }),
  );

  // 1. Provisioning and resizing times.
  const toReady: number[] = [];
  const resizeToReady: number[] = [];
  const deleteToTerminated: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const { developerToken: token, databasePath } = await provisionDatabase(controlPlane, request, { workspace: `times-${round}`, database: `times_${round}` });
    let t0 = performance.now();
    const created = await request('POST', `${databasePath}/compute`, { token, json: { instanceName: `i${round}`, instanceSize: 'small' } });
    expectStatus(created, 201, 'create instance');
    const path = `${databasePath}/compute/${created.body.instanceId}`;
    await untilStatus(request, token, path, 'READY');
    toReady.push(performance.now() - t0);
    t0 = performance.now();
    expectStatus(await request('PUT', path, { token, json: { instanceSize: 'medium' } }), 200, 'resize');
    await untilStatus(request, token, path, 'READY', 'ct_medium');
    resizeToReady.push(performance.now() - t0);
    t0 = performance.now();
    expectStatus(await request('DELETE', path, { token }), 200, 'delete');
    await untilStatus(request, token, path, 'TERMINATED');
    deleteToTerminated.push(performance.now() - t0);
  }
  console.log(`POST D/compute -> READY (small, an empty database):  ${stats(toReady)}`);
  console.log(`PUT (small -> medium) -> READY:                       ${stats(resizeToReady)}`);
  console.log(`DELETE -> TERMINATED (moved back):                    ${stats(deleteToTerminated)}`);

  // 2 and 3. The write pause moving onto a large instance and back; for the pgbench database, the
  // same pgbench runs before (on the shared cluster) and after (on the instance).
  const results: Record<string, Record<string, { tps: number; p99: number }>> = { shared: {}, instance: {} };
  const bench = async (target: Target, where: 'shared' | 'instance') => {
    for (const workload of WORKLOADS) {
      const run = await runPgbench(target, { workload, clients: 8, seconds: SECONDS, protocol: 'extended', logPrefix: join(computeDir, `pgbench-${where}`) });
      results[where][workload.name] = { tps: run.tps, p99: run.p99Ms };
    }
  };
  const empty = await databaseWithCredential(controlPlane, request, 'pause_empty', gatewayPort);
  const loaded = await databaseWithCredential(controlPlane, request, 'pause_pgbench', gatewayPort);
  await initialisePgbench(loaded.target, SCALE);
  for (const [label, db] of [['empty database', empty], [`pgbench scale ${SCALE}`, loaded]] as const) {
    if (db === loaded) await bench(db.target, 'shared');
    let instancePath = '';
    const onto = await writePause(db.target, async () => {
      const created = await request('POST', `${db.databasePath}/compute`, { token: db.token, json: { instanceName: 'pause', instanceSize: 'large' } });
      expectStatus(created, 201, 'create instance');
      instancePath = `${db.databasePath}/compute/${created.body.instanceId}`;
      await untilStatus(request, db.token, instancePath, 'READY');
    });
    console.log(`write pause, moving onto a large instance (${label}): ${onto.pauseMs.toFixed(0)} ms longest gap; ${onto.writes} writes, ${onto.failures} failed and retried`);
    if (db === loaded) await bench(db.target, 'instance');
    const back = await writePause(db.target, async () => {
      expectStatus(await request('DELETE', instancePath, { token: db.token }), 200, 'delete');
      await untilStatus(request, db.token, instancePath, 'TERMINATED');
    });
    console.log(`write pause, moving back (${label}): ${back.pauseMs.toFixed(0)} ms longest gap; ${back.writes} writes, ${back.failures} failed and retried`);
  }
  for (const workload of WORKLOADS) {
    const shared = results.shared[workload.name];
    const instance = results.instance[workload.name];
    console.log(
      `pgbench ${workload.name}, 8 clients, ${SECONDS} s, scale ${SCALE}, through the gateway: shared cluster ${shared.tps.toFixed(0)} tps (p99 ${shared.p99.toFixed(1)} ms), ` +
        `then on a large instance ${instance.tps.toFixed(0)} tps (p99 ${instance.p99.toFixed(1)} ms): ${(instance.tps / shared.tps).toFixed(2)}x`,
    );
  }
} finally {
  done();
  await teardown.run();
}

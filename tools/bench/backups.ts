// What continuous backups cost (issue 27): pgbench TPC-B-like on two embedded clusters alike but
// for WAL archiving (pgBackRest, as the platform configures it) in alternating rounds, the median
// ratio of their throughput; what the repository grows by per transaction and so per day of a
// steady load; and how long a restore to a point in time of the archiving cluster takes.
//
// Usage: npm run bench:backups [-- --scale 10 --clients 8 --seconds 20 --rounds 3 --steady-tps 100]
// Needs pgbench (Debian's postgresql-15 package) and pgBackRest (node tools/pgbackrest.mjs).
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, restoreToPointInTime, scratchDir, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { initialisePgbench, PGBENCH, runPgbench, WORKLOADS, type Target } from './gateway-pgbench.js';
import { median, runBench, Teardown } from './support.js';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

const scale = option('scale', 10);
const clients = option('clients', 8);
const seconds = option('seconds', 20);
const rounds = option('rounds', 3);
const steadyTps = option('steady-tps', 100);
const PGBACKREST = resolve(process.env.BACKUP_PGBACKREST ?? '.data/pgbackrest/bin/pgbackrest');
const TPCB = WORKLOADS.find((workload) => workload.script === 'tpcb-like')!;

/** Bytes under `dir`, every file counted once. */
function sizeOf(dir: string): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}

function target(server: EmbeddedPostgresHandle): Target {
  const url = new URL(server.url('postgres'));
  return { host: url.hostname, port: Number(url.port), user: decodeURIComponent(url.username), password: decodeURIComponent(url.password), database: 'postgres', tls: false };
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

const teardown = new Teardown();
await runBench(rounds * seconds * 2 + 900, teardown, async () => {
  for (const [what, path] of [
    ['pgbench', PGBENCH],
    ['pgBackRest', PGBACKREST],
  ]) {
    if (!existsSync(path)) throw new Error(`${what} is not at ${path} (README, "Benchmarks")`);
  }
  const dir = scratchDir('bench-backups-');
  teardown.add(dir, async (folder) => rmSync(folder, { recursive: true, force: true }));
  const repoDir = join(dir, 'repo');
  const archiving = teardown.add(
    await startEmbeddedPostgres({
      dir: join(dir, 'on'),
      port: await freePort(),
      backups: { pgbackrest: PGBACKREST, repoDir, stanza: 'bench', retentionDays: 1, walQueueMaxMiB: 1024, archiveTimeoutSeconds: 60 },
    }),
  );
  const plain = teardown.add(await startEmbeddedPostgres({ dir: join(dir, 'off'), port: await freePort() }));
  const servers = { on: archiving, off: plain };
  console.log(`backups: pgbench TPC-B-like, scale ${scale}, ${clients} clients, ${rounds} rounds of ${seconds} s each per cluster, alternating which goes first`);
  for (const server of [archiving, plain]) await initialisePgbench(target(server), scale);
  const full = await archiving.backups!.backup('full');
  console.log(`full backup of the archiving cluster after pgbench -i: ${((full.finishedAt.getTime() - full.startedAt.getTime()) / 1000).toFixed(1)} s, ${mb(sizeOf(repoDir))} MB in the repository`);

  const ratios: number[] = [];
  let archivedBytes = 0;
  let archivedTransactions = 0;
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? (['on', 'off'] as const) : (['off', 'on'] as const);
    const tps: Record<string, number> = {};
    for (const which of order) {
      const before = sizeOf(repoDir);
      const run = await runPgbench(target(servers[which]), { workload: TPCB, clients, seconds, protocol: 'simple' });
      tps[which] = run.tps;
      if (which === 'on') {
        await archiving.backups!.archiveNow();
        archivedBytes += sizeOf(repoDir) - before;
        archivedTransactions += run.transactions;
      }
    }
    ratios.push(tps.on / tps.off);
    console.log(`round ${round}: archiving on ${tps.on.toFixed(0)} TPS, off ${tps.off.toFixed(0)} TPS, on/off ${(tps.on / tps.off).toFixed(3)}`);
  }
  const ratio = median(ratios);
  console.log(`archiving on / off TPS, median of ${rounds}: ${ratio.toFixed(3)} (cost ${((1 - ratio) * 100).toFixed(1)}%; goal under 5%)`);
  const perTransaction = archivedBytes / archivedTransactions;
  console.log(
    `repository growth: ${perTransaction.toFixed(0)} bytes per TPC-B-like transaction (compressed WAL), so ${mb(perTransaction * steadyTps * 86_400)} MB a day at a steady ${steadyTps} TPS, ` +
      `plus what retention keeps of base backups (one full a week, a differential a day)`,
  );

  const at = new Date();
  await new Promise((done) => setTimeout(done, 1_000));
  const started = performance.now();
  const restored = teardown.add(await restoreToPointInTime(archiving.backups!, { at, dir: join(dir, 'restored'), port: await freePort() }));
  const restoreSeconds = (performance.now() - started) / 1000;
  console.log(`restore of the archiving cluster to a point in time (${mb(sizeOf(join(dir, 'on', 'data')))} MB of data): ${restoreSeconds.toFixed(1)} s to a promoted server`);
  await restored.stop();
  return true;
});

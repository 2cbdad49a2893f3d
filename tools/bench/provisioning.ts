// `npm run bench:provisioning [-- COUNT CONCURRENCY]`: how long a database takes from POST to
// READY, and how fast the API answers reads meanwhile. Runs on its own embedded PostgreSQL (or
// DATABASE_URL's server) with the API as a separate process, over loopback only; stops by itself.
import { eventually } from '@platform/testing';
import { percentile, startApiProcess, startControlPlane, Teardown } from './support.js';

const count = Number(process.argv[2] ?? 20);
const concurrency = Number(process.argv[3] ?? 4);

function summarize(name: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
  return `${name}: n=${sorted.length} mean=${mean.toFixed(1)} ms p50=${percentile(sorted, 50).toFixed(1)} p99=${percentile(sorted, 99).toFixed(1)} max=${sorted[sorted.length - 1].toFixed(1)}`;
}

const teardown = new Teardown();
try {
  const { controlPlane } = await startControlPlane(teardown);
  const { request } = teardown.add(await startApiProcess(controlPlane, { LOG_LEVEL: 'error' }));
  const { token } = await controlPlane.newDeveloper();
  await request('POST', '/workspaces', { token, json: { name: 'Bench', slug: 'bench' } });

  const toReady: number[] = [];
  const postLatency: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const name = `bench_${next++}`;
        const t0 = performance.now();
        const created = await request('POST', '/workspaces/bench/databases', { token, json: { databaseName: name, region: 'AWS_US_WEST_2' } });
        postLatency.push(performance.now() - t0);
        if (created.status !== 201) throw new Error(`create failed: ${created.text}`);
        await eventually(async () => {
          const found = await request('GET', `/workspaces/bench/databases/${name}`, { token });
          return found.body?.status === 'READY' || undefined;
        }, 60_000, `${name} READY`);
        toReady.push(performance.now() - t0);
      }
    }),
  );
  const wall = (performance.now() - started) / 1000;

  const reads: number[] = [];
  for (let i = 0; i < 500; i++) {
    const t0 = performance.now();
    const listed = await request('GET', '/workspaces/bench/databases', { token });
    if (listed.status !== 200) throw new Error(listed.text);
    reads.push(performance.now() - t0);
  }

  console.log(`databases: ${count}, concurrency ${concurrency}, ${(count / wall).toFixed(1)} databases/s to READY`);
  console.log(summarize('POST W/databases (201)', postLatency));
  console.log(summarize('POST to READY', toReady));
  console.log(summarize(`GET W/databases (${count} items, sequential)`, reads));
} finally {
  await teardown.run();
}

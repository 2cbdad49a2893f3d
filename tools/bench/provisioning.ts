// `npm run bench:provisioning [-- COUNT CONCURRENCY]`: how long a database takes from POST to
// READY, and how fast the API answers reads meanwhile. Runs on its own embedded PostgreSQL (or
// DATABASE_URL's server) with the API as a separate process, over loopback only; stops by itself.
import { spawn } from 'node:child_process';
import { eventually, freePort, httpClient, startTestPostgres } from '@platform/testing';
import { createTestControlPlane } from '@platform/test-fixtures';

const count = Number(process.argv[2] ?? 20);
const concurrency = Number(process.argv[3] ?? 4);
const audience = 'http://bench.test';
const issuer = 'http://bench-oauth.test';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summarize(name: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
  return `${name}: n=${sorted.length} mean=${mean.toFixed(1)} ms p50=${percentile(sorted, 50).toFixed(1)} p99=${percentile(sorted, 99).toFixed(1)} max=${sorted[sorted.length - 1].toFixed(1)}`;
}

const postgres = await startTestPostgres();
const controlPlane = await createTestControlPlane(postgres, { issuer, audience });
const port = await freePort();
const api = spawn(process.execPath, ['--import', 'tsx', 'apps/api/src/main.ts'], {
  env: { ...process.env, DATABASE_URL: controlPlane.url, API_PORT: String(port), PUBLIC_BASE_URL: audience, OAUTH_ISSUER: issuer, LOG_LEVEL: 'error' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const request = httpClient(`http://127.0.0.1:${port}`);
try {
  await eventually(async () => (await request('GET', '/healthz').catch(() => undefined))?.status === 200 || undefined, 30_000, 'the API');
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
  api.kill('SIGTERM');
  await new Promise((resolve) => api.once('exit', resolve));
  await controlPlane.close();
  await postgres.stop();
}

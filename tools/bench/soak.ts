// `npm run bench:soak [-- --minutes 60 --sample-seconds 10 --api-clients 8 --gateway-clients 4 --snapshots --snapshot-growth-mb 32]`
// (SOAK_MINUTES and SOAK_SAMPLE_SECONDS set the first two too; a flag wins):
// a long run of steady load on apps/api and apps/gateway (separate processes, as in production,
// over loopback) that samples both processes' memory and says whether it reaches a plateau.
// Load: --api-clients loops of a developer's requests against one database (create a tenant, read
// it, list the tenants, delete it, read the database) and --gateway-clients loops of TLS logins
// through the gateway as a credential, each running 50 queries before it disconnects (logins churn).
// Memory: each app runs with memory-sampler.mjs preloaded, which writes its RSS and heap every
// --sample-seconds. After a warm-up (a twentieth of the run, at least 30 s) the samples are split in
// thirds; the verdict per app and measure compares the slope (least squares, MB per minute) of the
// last third with the first: a plateau when the last third grows by less than PLATEAU_MB_PER_MIN, or
// by less than PLATEAU_NOISE_MB in all (short runs: samples wander by a few MB), or by less than a
// quarter of the first third's rate. heapUsed is sampled after a full collection (--expose-gc). With --snapshots, a heap snapshot of each app is
// taken after the warm-up, and another at the end when its used heap grew by more than
// --snapshot-growth-mb since then (compare them in Chrome DevTools' Memory tab); otherwise the first
// is removed. A snapshot stops the app for seconds (12 s for the API's 36 MB here) and leaves its RSS
// higher, so the samples judged start after it, and runs without --snapshots take none; a request
// on a keep-alive connection the app closes as it resumes may fail then (counted as "other", not 5xx). Samples and snapshots stay in
// tmp/bench-soak-<time>. Exits 0 when every measure reaches a plateau and no answer
// was a 5xx, 1 otherwise.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ensureDevelopmentCertificates } from '@platform/dev-tls';
import { freePort, httpClient } from '@platform/testing';
import { startAppProcess, type AppProcess } from '@platform/test-fixtures';
import { audience, expectStatus, issuer, provisionDatabase, runBench, sleep, startControlPlane, startGatewayApp, Teardown, track } from './support.js';

/** Growth of the last third below this (MB per minute; 60 MB an hour) counts as a plateau whatever the first third did. */
const PLATEAU_MB_PER_MIN = 1;
/** ... and so does a last third that rises by less than this in all (what RSS wanders by at rest) ... */
const PLATEAU_NOISE_MB = 3;
/** ... and a last third growing at less than this share of the first third's rate. */
const PLATEAU_SHARE = 0.25;
const QUERIES_PER_LOGIN = 50;

const { values: flags } = parseArgs({
  options: {
    minutes: { type: 'string', default: process.env.SOAK_MINUTES ?? '60' },
    'sample-seconds': { type: 'string', default: process.env.SOAK_SAMPLE_SECONDS ?? '10' },
    'api-clients': { type: 'string', default: '8' },
    'gateway-clients': { type: 'string', default: '4' },
    snapshots: { type: 'boolean', default: false },
    'snapshot-growth-mb': { type: 'string', default: '32' },
  },
});
const settings = {
  minutes: positive('minutes', flags.minutes),
  sampleSeconds: positive('sample-seconds', flags['sample-seconds']),
  apiClients: positive('api-clients', flags['api-clients']),
  gatewayClients: positive('gateway-clients', flags['gateway-clients']),
  snapshotGrowthMb: positive('snapshot-growth-mb', flags['snapshot-growth-mb']),
};

function positive(name: string, value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new Error(`--${name} must be a positive number, not '${value}'`);
  return number;
}

interface MemorySample {
  at: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
}

type Measure = 'rss' | 'heapUsed';

interface Counters {
  requests: number;
  serverErrors: number;
  otherFailures: number;
  logins: number;
  queries: number;
  gatewayErrors: number;
}

const counters: Counters = { requests: 0, serverErrors: 0, otherFailures: 0, logins: 0, queries: 0, gatewayErrors: 0 };
const firstErrors: string[] = [];

function noteError(what: string): void {
  if (firstErrors.length < 10) firstErrors.push(what);
}

const MB = 1024 * 1024;
const sampler = pathToFileURL(resolve('tools/bench/memory-sampler.mjs')).href;

function readSamples(file: string): MemorySample[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as MemorySample);
}

/** Least-squares slope in MB per minute. */
function slopeMbPerMin(samples: MemorySample[], measure: Measure): number {
  if (samples.length < 2) return 0;
  const xs = samples.map((sample) => sample.at / 60_000);
  const ys = samples.map((sample) => sample[measure] / MB);
  const meanX = xs.reduce((a, b) => a + b, 0) / xs.length;
  const meanY = ys.reduce((a, b) => a + b, 0) / ys.length;
  let numerator = 0;
  let denominator = 0;
  for (let i = 0; i < xs.length; i++) {
    numerator += (xs[i] - meanX) * (ys[i] - meanY);
    denominator += (xs[i] - meanX) ** 2;
  }
  return denominator === 0 ? 0 : numerator / denominator;
}

interface Verdict {
  app: string;
  measure: Measure;
  startMb: number;
  endMb: number;
  maxMb: number;
  firstSlope: number;
  lastSlope: number;
  plateau: boolean;
}

function judge(app: string, samples: MemorySample[], measure: Measure): Verdict {
  const third = Math.max(2, Math.floor(samples.length / 3));
  const firstSlope = slopeMbPerMin(samples.slice(0, third), measure);
  const lastSlope = slopeMbPerMin(samples.slice(-third), measure);
  const lastMinutes = (samples.at(-1)!.at - samples.at(-third)!.at) / 60_000;
  const plateau = lastSlope < PLATEAU_MB_PER_MIN || lastSlope * lastMinutes < PLATEAU_NOISE_MB || lastSlope < PLATEAU_SHARE * firstSlope;
  const values = samples.map((sample) => sample[measure] / MB);
  return { app, measure, startMb: values[0], endMb: values.at(-1)!, maxMb: Math.max(...values), firstSlope, lastSlope, plateau };
}

/** Asks the app for a heap snapshot (--heapsnapshot-signal) and waits until its file is written; answers its path. */
async function heapSnapshot(app: AppProcess, dir: string): Promise<string> {
  const pid = app.child.pid!;
  const mine = () => readdirSync(dir).filter((name) => name.endsWith('.heapsnapshot') && name.includes(`.${pid}.`));
  const before = new Set(mine());
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 120_000;
  for (;;) {
    const made = mine().find((name) => !before.has(name));
    if (made) {
      // Written in one go by V8; a size that stays put for a second is a finished file.
      const path = join(dir, made);
      const size = statSync(path).size;
      await sleep(1_000);
      if (size > 0 && statSync(path).size === size) return path;
    } else {
      await sleep(200);
    }
    if (Date.now() > deadline) throw new Error(`no heap snapshot from process ${pid} within 120 s`);
  }
}

async function apiLoop(request: ReturnType<typeof httpClient>, token: string, databasePath: string, until: number, worker: number): Promise<void> {
  const send = async (method: string, path: string, expected: number, json?: unknown) => {
    const answer = await request(method, path, { token, json }).catch((error: Error) => ({ status: 0, text: error.message, body: undefined }));
    counters.requests++;
    if (answer.status >= 500) {
      counters.serverErrors++;
      noteError(`${method} ${path}: ${answer.status} ${answer.text.slice(0, 200)}`);
    } else if (answer.status !== expected) {
      counters.otherFailures++;
      noteError(`${method} ${path}: expected ${expected}, got ${answer.status} ${answer.text.slice(0, 200)}`);
    }
    return answer;
  };
  for (let round = 0; Date.now() < until; round++) {
    const created = await send('POST', `${databasePath}/tenants`, 201, { name: `soak-${worker}-${round}` });
    const id = (created.body as { id?: string } | undefined)?.id;
    if (id) {
      await send('GET', `${databasePath}/tenants/${id}`, 200);
      await send('GET', `${databasePath}/tenants`, 200);
      await send('DELETE', `${databasePath}/tenants/${id}`, 204);
    }
    await send('GET', databasePath, 200);
  }
}

async function gatewayLoop(connection: pg.ClientConfig, until: number): Promise<void> {
  while (Date.now() < until) {
    const client = new pg.Client(connection);
    client.on('error', () => {});
    try {
      await client.connect();
      counters.logins++;
      for (let i = 0; i < QUERIES_PER_LOGIN && Date.now() < until; i++) {
        await client.query('select count(*) from tenants where name like $1', [`soak-${i % 8}%`]);
        counters.queries++;
      }
    } catch (error) {
      counters.gatewayErrors++;
      noteError(`gateway: ${(error as Error).message}`);
      await sleep(500);
    } finally {
      await client.end().catch(() => {});
    }
  }
}

const teardown = new Teardown();
await runBench(settings.minutes * 60 + 600, teardown, async () => {
  const dir = resolve('tmp', `bench-soak-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(dir, { recursive: true });
  const { controlPlane } = await startControlPlane(teardown);
  const sampleMs = String(settings.sampleSeconds * 1000);
  const memoryFlags = ['--expose-gc', '--import', sampler, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`];

  const api = teardown.add(
    await startAppProcess('apps/api/src/main.ts', {
      portVariable: 'API_PORT',
      env: {
        ...controlPlane.env,
        NODE_ENV: 'production',
        API_HOST: '127.0.0.1',
        PUBLIC_BASE_URL: audience,
        OAUTH_ISSUER: issuer,
        LOG_LEVEL: 'error',
        PASSWORD_HASH_LOGN: '10',
        SOAK_MEMORY_FILE: join(dir, 'api.jsonl'),
        SOAK_SAMPLE_MS: sampleMs,
      },
      execArgv: memoryFlags,
      stdio: ['ignore', 'inherit', 'inherit'],
      spawned: track,
    }),
  );
  const { developerToken, databasePath } = await provisionDatabase(controlPlane, api.request, { workspace: 'bench-soak', database: 'soak' });
  const created = await api.request('POST', `${databasePath}/credentials`, { token: developerToken });
  expectStatus(created, 201, 'create credential');
  const credential = created.body as { id: string; password: string };

  const certificates = await ensureDevelopmentCertificates(join(dir, 'tls'), ['localhost', '127.0.0.1', '::1']);
  const gatewayPort = await freePort();
  const gateway = teardown.add(
    await startGatewayApp(
      controlPlane,
      gatewayPort,
      {
        GATEWAY_TLS_CERT: certificates.serverCert,
        GATEWAY_TLS_KEY: certificates.serverKey,
        SOAK_MEMORY_FILE: join(dir, 'gateway.jsonl'),
        SOAK_SAMPLE_MS: sampleMs,
      },
      memoryFlags,
    ),
  );
  const connection: pg.ClientConfig = {
    host: '127.0.0.1',
    port: gatewayPort,
    user: credential.id,
    password: credential.password,
    database: 'soak',
    ssl: { ca: readFileSync(certificates.caCert, 'utf8'), servername: 'localhost' },
  };

  const started = Date.now();
  const until = started + settings.minutes * 60_000;
  const warmUpMs = Math.max(30_000, (settings.minutes * 60_000) / 20);
  console.log(
    `Soak: ${settings.minutes} min, ${settings.apiClients} API clients, ${settings.gatewayClients} gateway clients (TLS, ${QUERIES_PER_LOGIN} queries a login), ` +
      `memory every ${settings.sampleSeconds} s, warm-up ${Math.round(warmUpMs / 1000)} s${flags.snapshots ? ', heap snapshots' : ''}; files in ${dir}`,
  );
  const request = httpClient(api.url);
  const loops = [
    ...Array.from({ length: settings.apiClients }, (_, worker) => apiLoop(request, developerToken, databasePath, until, worker)),
    ...Array.from({ length: settings.gatewayClients }, () => gatewayLoop(connection, until)),
  ];

  const progress = (async () => {
    let last = { at: started, requests: 0, queries: 0 };
    const snapshots: Record<string, string> = {};
    let snapshotBaseline: Record<string, number> | null = null;
    let judgedFrom = started + warmUpMs;
    while (Date.now() < until) {
      await sleep(Math.min(settings.sampleSeconds * 1000, Math.max(0, until - Date.now())));
      const now = Date.now();
      const [apiNow, gatewayNow] = [readSamples(join(dir, 'api.jsonl')).at(-1), readSamples(join(dir, 'gateway.jsonl')).at(-1)];
      const seconds = (now - last.at) / 1000;
      const mb = (value: number | undefined) => (value === undefined ? '?' : (value / MB).toFixed(1));
      console.log(
        `${((now - started) / 60_000).toFixed(1).padStart(6)} min  api rss ${mb(apiNow?.rss)} heap ${mb(apiNow?.heapUsed)} MB  ` +
          `gateway rss ${mb(gatewayNow?.rss)} heap ${mb(gatewayNow?.heapUsed)} MB  ` +
          `${((counters.requests - last.requests) / seconds).toFixed(0)} req/s  ${((counters.queries - last.queries) / seconds).toFixed(0)} queries/s  ` +
          `5xx ${counters.serverErrors}  other ${counters.otherFailures + counters.gatewayErrors}`,
      );
      last = { at: now, requests: counters.requests, queries: counters.queries };
      if (flags.snapshots && !snapshotBaseline && now - started >= warmUpMs && until - now > warmUpMs) {
        snapshotBaseline = { api: apiNow?.heapUsed ?? 0, gateway: gatewayNow?.heapUsed ?? 0 };
        snapshots.api = await heapSnapshot(api, dir);
        snapshots.gateway = await heapSnapshot(gateway, dir);
        judgedFrom = Date.now() + settings.sampleSeconds * 1000;
      }
    }
    return { snapshots, snapshotBaseline, judgedFrom };
  })();
  await Promise.all(loops);
  const { snapshots, snapshotBaseline, judgedFrom } = await progress;

  const verdicts: Verdict[] = [];
  for (const [name, app] of [
    ['api', api],
    ['gateway', gateway],
  ] as const) {
    const samples = readSamples(join(dir, `${name}.jsonl`)).filter((sample) => sample.at >= judgedFrom && sample.at <= until);
    if (samples.length < 6) throw new Error(`${name}: ${samples.length} samples after the warm-up; run longer or sample more often`);
    verdicts.push(judge(name, samples, 'rss'), judge(name, samples, 'heapUsed'));
    const grewMb = (samples.at(-1)!.heapUsed - (snapshotBaseline?.[name] ?? samples[0].heapUsed)) / MB;
    if (snapshots[name] && grewMb > settings.snapshotGrowthMb) {
      const end = await heapSnapshot(app, dir);
      console.log(`${name}: used heap grew ${grewMb.toFixed(1)} MB since the first snapshot; compare ${snapshots[name]} with ${end}`);
    } else if (snapshots[name]) {
      rmSync(snapshots[name], { force: true });
    }
  }

  const minutes = (Date.now() - started) / 60_000;
  console.log(`\n${counters.requests} API requests (${(counters.requests / minutes / 60).toFixed(0)}/s), ${counters.serverErrors} 5xx, ${counters.otherFailures} other unexpected answers;`);
  console.log(`${counters.logins} gateway logins, ${counters.queries} queries (${(counters.queries / minutes / 60).toFixed(0)}/s), ${counters.gatewayErrors} gateway errors.`);
  for (const error of firstErrors) console.log(`  ${error}`);
  console.log(
    `\nMemory after the warm-up (MB; slopes in MB/min, first third -> last third; plateau: last < ${PLATEAU_MB_PER_MIN}, ` +
      `or < ${PLATEAU_NOISE_MB} MB over the last third, or < ${PLATEAU_SHARE} x first):`,
  );
  for (const verdict of verdicts) {
    console.log(
      `  ${verdict.app.padEnd(8)} ${verdict.measure.padEnd(9)} ${verdict.startMb.toFixed(1).padStart(7)} -> ${verdict.endMb.toFixed(1).padStart(7)} (max ${verdict.maxMb.toFixed(1)})  ` +
        `slope ${verdict.firstSlope.toFixed(2)} -> ${verdict.lastSlope.toFixed(2)}  ${verdict.plateau ? 'plateau' : 'STILL GROWING'}`,
    );
  }
  if (!flags.snapshots && verdicts.some((verdict) => !verdict.plateau)) console.log('Run again with --snapshots to compare heap snapshots of the start and the end.');
  return verdicts.every((verdict) => verdict.plateau) && counters.serverErrors === 0;
});

// `npm run bench:token [-- --rounds 5 --seconds 10 --warmup 2 --connections 50 --profile]`:
// POST /oauth2/token with grant_type=client_credentials on our token service (apps/oauth, its own
// process, on its own embedded PostgreSQL or DATABASE_URL's server) side by side with oidc-provider
// (tools/bench/oidc-provider-server.ts, its own process) holding the same client id and secret and
// signing JWT access tokens with ES256 too. Both answers are checked first (200, an ES256 JWT that
// verifies against the server's JWKS, 401 for a wrong secret). Then autocannon loads them in
// turn, ours then theirs, round after round, over loopback. The requirement: ours reaches at least
// 1.5x oidc-provider's requests/s (the median of the per-round ratios). Exits 0 when it is met
// with every response a 2xx, 1 otherwise. Where /proc exists each run also reports the CPU time
// the server spent per request (with, for ours, its PostgreSQL backends) and the CPU other
// processes of the machine took meanwhile: on a shared 2-core machine that tells a slow server
// from a busy neighbour. With --profile both servers run under --cpu-prof, which
// slows them: the throughput figures of such a run are not the reference, the summary is the point.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { Sha256ClientSecrets } from '@platform/auth';
import { createWorkspace, registerClient, type Principal } from '@platform/domain';
import { openRepositories } from '@platform/persistence';
import { httpClient } from '@platform/testing';
import { startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { summarizeProfiles } from './cpu-profiles.js';
import { audience, median, sleep, startControlPlane, Teardown, timeLimit, track } from './support.js';

declare module 'autocannon' {
  interface Options {
    /** The request body (autocannon sets Content-Length). */
    body?: string;
  }
}

const TARGET_RATIO = 1.5;
const TOKEN_TTL_SECONDS = 3600;
const TOKEN_PATH = '/oauth2/token';
const FORM = 'grant_type=client_credentials';

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    profile: { type: 'boolean', default: false },
  },
});
const settings = {
  rounds: positive('rounds', flags.rounds),
  seconds: positive('seconds', flags.seconds),
  warmup: positive('warmup', flags.warmup),
  connections: positive('connections', flags.connections),
};
const profileDir = flags.profile ? resolve('tmp/bench-profiles', new Date().toISOString().replace(/[:.]/g, '-')) : undefined;

function positive(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`--${name} must be a positive integer, got '${value}'`);
  return parsed;
}

interface Server {
  name: string;
  url: string;
  jwksPath: string;
  /** The `iss` its tokens carry. */
  issuer: string;
  /** The processes whose CPU time serves its requests: itself, and PostgreSQL backends for ours. */
  pids(): number[];
  app: AppProcess;
}

const teardown = new Teardown();

/** Spawns a server process on loopback, stopped at the end however the run ends, and waits until `readyPath` answers 200. */
async function startServer(
  name: string,
  script: string,
  settings: { portVariable: string; readyPath: string; env: (url: string) => Record<string, string> },
): Promise<AppProcess> {
  const app = await startAppProcess(script, {
    portVariable: settings.portVariable,
    env: (url) => ({ NODE_ENV: 'production', ...settings.env(url) }),
    readyPath: settings.readyPath,
    execArgv: profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, name)] : [],
    stdio: ['ignore', 'inherit', 'inherit'],
    spawned: track,
  });
  return teardown.add(app);
}

async function startOurs(controlPlane: TestControlPlane): Promise<Server> {
  const app = await startServer('ours', 'apps/oauth/src/main.ts', {
    portVariable: 'OAUTH_PORT',
    readyPath: '/healthz',
    env: (url) => ({
      ...controlPlane.env,
      OAUTH_HOST: '127.0.0.1',
      OAUTH_ISSUER: url,
      PUBLIC_BASE_URL: audience,
      DEVELOPER_TOKEN_TTL: String(TOKEN_TTL_SECONDS),
      LOG_LEVEL: 'error',
    }),
  });
  const database = new URL(controlPlane.url).pathname.slice(1);
  const pids = () => [app.child.pid!, ...postgresBackends(database)];
  return { name: 'ours (apps/oauth)', url: app.url, jwksPath: '/.well-known/jwks.json', issuer: app.url, pids, app };
}

async function startTheirs(client: { id: string; secret: string }): Promise<Server> {
  const app = await startServer('oidc-provider', fileURLToPath(new URL('./oidc-provider-server.ts', import.meta.url)), {
    portVariable: 'OP_PORT',
    readyPath: '/.well-known/openid-configuration',
    env: (url) => ({
      OP_ISSUER: url,
      OP_AUDIENCE: audience,
      OP_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
      OP_CLIENT_ID: client.id,
      OP_CLIENT_SECRET: client.secret,
    }),
  });
  return { name: 'oidc-provider 9.13.3', url: app.url, jwksPath: '/jwks', issuer: app.url, pids: () => [app.child.pid!], app };
}

/** A workspace and a confidential client in it, registered through the domain's use cases. */
async function registerBenchClient(controlPlane: TestControlPlane): Promise<{ id: string; secret: string }> {
  const developer = await controlPlane.newDeveloper();
  const caller: Principal = { kind: 'developer', developerId: developer.id, scopes: [] };
  const repositories = openRepositories(controlPlane.orm);
  await createWorkspace(repositories, caller, { name: 'Token bench', slug: 'token-bench' });
  const { client, secret } = await registerClient({ ...repositories, secrets: new Sha256ClientSecrets() }, caller, 'token-bench', {
    name: 'Bench client',
    type: 'confidential',
    redirectUris: [],
  });
  if (!secret) throw new Error('a confidential client came without a secret');
  return { id: client.id, secret };
}

/** HTTP Basic as RFC 6749 section 2.3.1 has it: both parts form-encoded first. */
function basicAuthorization(id: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

/**
 * Aborts unless the server answers the benchmark's exact request with 200 and an ES256 JWT that
 * verifies against its own JWKS, and refuses a wrong secret: both must really do the work.
 */
async function verifyServer(server: Server, client: { id: string; secret: string }, authorization: string): Promise<void> {
  const request = httpClient(server.url);
  const post = (auth: string) =>
    request('POST', TOKEN_PATH, { raw: FORM, contentType: 'application/x-www-form-urlencoded', headers: { authorization: auth } });
  const answer = await post(authorization);
  if (answer.status !== 200) throw new Error(`${server.name}: expected 200, got ${answer.status}: ${answer.text}`);
  const { access_token: token, token_type: tokenType } = answer.body as { access_token?: string; token_type?: string };
  if (typeof token !== 'string' || tokenType?.toLowerCase() !== 'bearer') throw new Error(`${server.name}: not a bearer token: ${answer.text}`);
  const header = decodeProtectedHeader(token);
  if (header.alg !== 'ES256') throw new Error(`${server.name}: the token is signed ${header.alg}, not ES256`);
  const jwks = await request<JSONWebKeySet>('GET', server.jwksPath);
  if (jwks.status !== 200) throw new Error(`${server.name}: JWKS answered ${jwks.status}`);
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.body), { algorithms: ['ES256'], issuer: server.issuer, audience });
  if (payload.client_id !== client.id) throw new Error(`${server.name}: client_id ${String(payload.client_id)} in the token`);
  const refused = await post(basicAuthorization(client.id, `${client.secret.slice(0, -1)}x`));
  if (refused.status !== 401) throw new Error(`${server.name}: a wrong secret got ${refused.status}, not 401`);
  console.log(`${server.name}: 200, ${header.alg} JWT (typ ${header.typ}), ${token.length} characters, verified; wrong secret 401`);
}

const hasProc = existsSync('/proc/stat');
const ticksPerSecond = hasProc ? Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100 : 100;

/** CPU seconds (user + system) a process has used; 0 once it is gone. */
function cpuSecondsOf(pid: number): number {
  try {
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return 0;
  }
}

/** CPU seconds the whole machine has been busy (every core, not idle, not waiting for I/O). */
function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = ticks;
  return (user + nice + system + irq + softirq + steal) / ticksPerSecond;
}

/** PostgreSQL backends connected to `database` (their title reads `postgres: user database host ...`). */
function postgresBackends(database: string): number[] {
  if (!hasProc) return [];
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (title.startsWith('postgres: ') && title.split(' ')[2] === database) pids.push(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  return pids;
}

interface CpuUse {
  /** CPU seconds of the server under load (and its PostgreSQL backends). */
  server: number;
  /** Cores' worth of CPU that processes outside this benchmark used, on average. */
  otherCores: number;
}

/** Runs `work` and answers what CPU the server and the rest of the machine used meanwhile. */
async function measureCpu<T>(servers: Server[], loaded: Server, work: () => Promise<T>): Promise<{ value: T; cpu: CpuUse | undefined }> {
  if (!hasProc) return { value: await work(), cpu: undefined };
  // Backends are listed before and after: a pool may open one during the run.
  const tracked = () => new Set([process.pid, ...servers.flatMap((server) => server.pids())]);
  const before = tracked();
  const startCpu = new Map([...before].map((pid) => [pid, cpuSecondsOf(pid)]));
  const startMachine = machineBusySeconds();
  const startTime = performance.now();
  const value = await work();
  const seconds = (performance.now() - startTime) / 1000;
  const machine = machineBusySeconds() - startMachine;
  const used = (pid: number) => cpuSecondsOf(pid) - (startCpu.get(pid) ?? 0);
  const all = new Set([...before, ...tracked()]);
  const ours = [...all].reduce((sum, pid) => sum + used(pid), 0);
  const server = [...new Set(loaded.pids())].reduce((sum, pid) => sum + used(pid), 0);
  return { value, cpu: { server, otherCores: Math.max(0, machine - ours) / seconds } };
}

function load(server: Server, authorization: string, seconds: number): Promise<Result> {
  return autocannon({
    url: `${server.url}${TOKEN_PATH}`,
    method: 'POST',
    headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
    body: FORM,
    connections: settings.connections,
    duration: seconds,
  });
}

interface Measurement {
  round: number;
  server: Server;
  result: Result;
  cpu: CpuUse | undefined;
}

/** Runs above this much CPU taken by other processes are marked: their figures are suspect. */
const BUSY_NEIGHBOUR_CORES = 0.25;

/** Microseconds of server CPU per successful request. */
function cpuPerRequest(m: Measurement): number | undefined {
  return m.cpu && m.result['2xx'] > 0 ? (m.cpu.server * 1e6) / m.result['2xx'] : undefined;
}

function failures(result: Result): number {
  return result.non2xx + result.errors + result.timeouts;
}

function row(cells: (string | number)[]): string {
  const widths = [6, 22, 9, 8, 8, 9, 8, 7, 12, 12];
  return cells.map((cell, i) => (i < 2 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join(' ');
}

function report(measurements: Measurement[], ours: Server, theirs: Server): { ratio: number; valid: boolean } {
  console.log(
    `\nPOST ${TOKEN_PATH} grant_type=client_credentials, Basic auth, same client id and secret on both; ` +
      `autocannon ${settings.connections} connections, ${settings.seconds} s per run after ${settings.warmup} s of warm-up, ` +
      `loopback, alternating${profileDir ? '; UNDER --cpu-prof' : ''}`,
  );
  console.log(row(['round', 'server', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors', 'CPU us/req', 'other cores']));
  const ratios: number[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const ofRound = measurements.filter((m) => m.round === round);
    for (const m of ofRound) {
      const { server, result, cpu } = m;
      const busy = cpu && cpu.otherCores > BUSY_NEIGHBOUR_CORES ? ' *' : '';
      console.log(
        row([
          round,
          server.name,
          result.requests.average.toFixed(0),
          result.latency.p50,
          result.latency.p99,
          result['2xx'],
          result.non2xx,
          result.errors + result.timeouts,
          cpuPerRequest(m)?.toFixed(0) ?? '-',
          cpu ? `${cpu.otherCores.toFixed(2)}${busy}` : '-',
        ]),
      );
    }
    const mine = ofRound.find((m) => m.server === ours)!.result.requests.average;
    const reference = ofRound.find((m) => m.server === theirs)!.result.requests.average;
    ratios.push(mine / reference);
    console.log(row(['', 'ratio ours/theirs', (mine / reference).toFixed(2)]));
  }
  const medianOf = (server: Server) => median(measurements.filter((m) => m.server === server).map((m) => m.result.requests.average));
  const ratio = median(ratios);
  const valid = measurements.every((m) => failures(m.result) === 0 && m.result['2xx'] > 0);
  console.log(
    `\nmedian req/s: ours ${medianOf(ours).toFixed(0)}, oidc-provider ${medianOf(theirs).toFixed(0)}; ` +
      `median of the per-round ratios ours/theirs ${ratio.toFixed(2)} (target >= ${TARGET_RATIO}): ${ratio >= TARGET_RATIO ? 'MET' : 'NOT MET'}`,
  );
  const cpuOf = (server: Server) => {
    const samples = measurements.filter((m) => m.server === server).map(cpuPerRequest);
    return samples.every((x) => x !== undefined) ? median(samples as number[]) : undefined;
  };
  const [oursCpu, theirsCpu] = [cpuOf(ours), cpuOf(theirs)];
  if (oursCpu !== undefined && theirsCpu !== undefined) {
    console.log(
      `median CPU per request: ours ${oursCpu.toFixed(0)} us (server process and its PostgreSQL backends), oidc-provider ${theirsCpu.toFixed(0)} us; ` +
        `theirs/ours ${(theirsCpu / oursCpu).toFixed(2)} (an estimate of the ratio free of the load generator and of neighbours)`,
    );
  }
  if (measurements.some((m) => m.cpu && m.cpu.otherCores > BUSY_NEIGHBOUR_CORES)) {
    console.log(`* other processes used more than ${BUSY_NEIGHBOUR_CORES} of a core during that run: its throughput is suspect.`);
  }
  if (!valid) console.log('Some responses were not 2xx (or failed): the figures above are not valid.');
  return { ratio, valid };
}

const perRun = settings.warmup + settings.seconds + 2;
const cancelLimit = timeLimit(120 + settings.rounds * 2 * perRun, teardown.run);
let exitCode = 1;
try {
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const { controlPlane } = await startControlPlane(teardown);
  const client = await registerBenchClient(controlPlane);
  const authorization = basicAuthorization(client.id, client.secret);
  const ours = await startOurs(controlPlane);
  const theirs = await startTheirs(client);
  await verifyServer(ours, client, authorization);
  await verifyServer(theirs, client, authorization);

  const measurements: Measurement[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    for (const server of [ours, theirs]) {
      await load(server, authorization, settings.warmup);
      const { value: result, cpu } = await measureCpu([ours, theirs], server, () => load(server, authorization, settings.seconds));
      measurements.push({ round, server, result, cpu });
      console.log(`round ${round}, ${server.name}: ${result.requests.average.toFixed(0)} req/s, ${failures(result)} failed or non-2xx`);
      // Lets the connections of this run close before the next one starts.
      await sleep(1000);
    }
  }
  const { ratio, valid } = report(measurements, ours, theirs);
  // The servers write their profiles as they exit.
  for (const { app } of [ours, theirs]) await app.stop();
  if (profileDir) summarizeProfiles(profileDir);
  exitCode = valid && ratio >= TARGET_RATIO ? 0 : 1;
} catch (error) {
  console.error(error);
} finally {
  cancelLimit();
  await teardown.run();
}
// Explicitly: the exit code is the verdict, and a pool or timer left open must not keep the run alive.
process.exit(exitCode);

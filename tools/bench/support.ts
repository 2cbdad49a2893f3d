// Shared by the benchmarks in this folder: the API as a separate process on a free loopback port,
// a provisioned database to work on, a time limit, what to stop at the end, and small statistics.
// Nothing here listens beyond 127.0.0.1.
import { type ChildProcess } from 'node:child_process';
import { eventually, startTestPostgres, type httpClient, type TestPostgres } from '@platform/testing';
import { createTestControlPlane, startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';

export const audience = 'http://bench.test';
export const issuer = 'http://bench-oauth.test';

export type Request = ReturnType<typeof httpClient>;

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * What a run has started, stopped last first when the run ends however it ends (its time limit
 * included); one that fails to stop does not keep the others running, and a second run stops nothing.
 */
export class Teardown {
  private readonly steps: (() => Promise<unknown>)[] = [];

  /** Answers `thing`, to be stopped at the end with `stop`, by default its own `stop()`. */
  add<T extends { stop(): Promise<unknown> }>(thing: T): T;
  add<T>(thing: T, stop: (thing: T) => Promise<unknown>): T;
  add<T>(thing: T, stop = (it: T) => (it as { stop(): Promise<unknown> }).stop()): T {
    this.steps.push(() => stop(thing));
    return thing;
  }

  readonly run = async (): Promise<void> => {
    for (let step = this.steps.pop(); step; step = this.steps.pop()) await step().catch(() => {});
  };
}

/** An embedded PostgreSQL (or DATABASE_URL's server) with a migrated control plane on it, both stopped by `teardown`. */
export async function startControlPlane(teardown: Teardown): Promise<{ postgres: TestPostgres; controlPlane: TestControlPlane }> {
  const postgres = teardown.add(await startTestPostgres());
  const controlPlane = teardown.add(await createTestControlPlane(postgres, { issuer, audience }), (plane) => plane.close());
  return { postgres, controlPlane };
}

/**
 * Starts apps/api as its own process against the control plane, on a free loopback port, with
 * `env` on top of this process's environment (an `undefined` value removes a variable).
 */
export function startApiProcess(controlPlane: TestControlPlane, env: Record<string, string | undefined>, execArgv: string[] = []): Promise<AppProcess> {
  return startAppProcess('apps/api/src/main.ts', {
    portVariable: 'API_PORT',
    env: { ...controlPlane.env, API_HOST: '127.0.0.1', PUBLIC_BASE_URL: audience, OAUTH_ISSUER: issuer, ...env },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit'],
    spawned: track,
  });
}

/**
 * Starts apps/gateway as its own process over the control plane, for PostgreSQL clients on `port`
 * (its admin port, which answers when it is ready, free), with `env` on top.
 */
export function startGatewayApp(controlPlane: TestControlPlane, port: number, env: Record<string, string>, execArgv: string[] = []): Promise<AppProcess> {
  return startAppProcess('apps/gateway/src/main.ts', {
    portVariable: 'GATEWAY_ADMIN_PORT',
    env: {
      NODE_ENV: 'production',
      DATABASE_URL: controlPlane.url,
      LOG_LEVEL: 'error',
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      GATEWAY_PUBLIC_URL: `postgres://localhost:${port}`,
      ...env,
    },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit'],
    spawned: track,
  });
}

const children = new Set<ChildProcess>();

/** Remembers a child process so that the time limit can end it. */
export function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/**
 * Ends the run if it takes longer than `seconds`: the children started here are killed, `cleanup`
 * gets a few seconds (to stop PostgreSQL), and the process exits with a failure. Ctrl-C does the same.
 */
export function timeLimit(seconds: number, cleanup: () => Promise<void>): () => void {
  const abort = (why: string) => {
    console.error(`\n${why}: stopping`);
    for (const child of children) child.kill('SIGKILL');
    const forced = setTimeout(() => process.exit(1), 15_000);
    forced.unref();
    void cleanup().finally(() => process.exit(1));
  };
  const timer = setTimeout(() => abort(`time limit of ${seconds} s reached`), seconds * 1000);
  timer.unref();
  const onSignal = () => abort('interrupted');
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    clearTimeout(timer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/**
 * Runs a benchmark within `seconds` (timeLimit), stops what `teardown` holds however it ends (one
 * stop, awaited by an interruption and the end alike), and exits 0 when `body` answers true.
 */
export async function runBench(seconds: number, teardown: Teardown, body: () => Promise<boolean>): Promise<never> {
  let stopping: Promise<void> | undefined;
  const stopEverything = () => (stopping ??= teardown.run());
  const cancelLimit = timeLimit(seconds, stopEverything);
  let exitCode = 1;
  try {
    exitCode = (await body()) ? 0 : 1;
  } catch (error) {
    console.error(error);
  } finally {
    cancelLimit();
    await stopEverything();
  }
  // Explicitly: the exit code is the verdict, and a pool or timer left open must not keep the run alive.
  process.exit(exitCode);
}

/** Expects a status, or fails with what the server said. */
export function expectStatus(response: { status: number; text: string }, status: number, what: string): void {
  if (response.status !== status) throw new Error(`${what}: expected ${status}, got ${response.status}: ${response.text}`);
}

/** A workspace and a READY database in it, made by a new developer through the API. */
export async function provisionDatabase(
  controlPlane: TestControlPlane,
  request: Request,
  names: { workspace: string; database: string },
): Promise<{ developerToken: string; databasePath: string }> {
  const { token } = await controlPlane.newDeveloper({ ttlSeconds: 3600 });
  expectStatus(await request('POST', '/workspaces', { token, json: { name: names.workspace, slug: names.workspace } }), 201, 'create workspace');
  const databasePath = `/workspaces/${names.workspace}/databases/${names.database}`;
  expectStatus(
    await request('POST', `/workspaces/${names.workspace}/databases`, { token, json: { databaseName: names.database, region: 'AWS_US_WEST_2' } }),
    201,
    'create database',
  );
  await eventually(async () => ((await request('GET', databasePath, { token })).body?.status === 'READY' ? true : undefined), 60_000, 'database READY');
  return { developerToken: token, databasePath };
}

/** Creates a tenant as the developer; answers its id. */
export async function createTenant(request: Request, token: string, databasePath: string, name: string): Promise<string> {
  const created = await request('POST', `${databasePath}/tenants`, { token, json: { name } });
  expectStatus(created, 201, `create tenant ${name}`);
  return created.body.id as string;
}

/** Creates a user with a password in a tenant, as the developer; answers the user's id. */
export async function createUser(request: Request, token: string, tenantPath: string, credentials: { email: string; password: string }): Promise<string> {
  const created = await request('POST', `${tenantPath}/users`, { token, json: credentials });
  expectStatus(created, 201, `create user ${credentials.email}`);
  return created.body.id as string;
}

import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import { APP_NODE_FLAGS } from '@platform/process';
import { eventually, freePort, httpClient } from '@platform/testing';

export interface AppProcessOptions {
  /** The variable the app reads its port from (`API_PORT`, `OAUTH_PORT`). */
  portVariable: string;
  /** A free loopback port unless given, e.g. to restart an app where it was. */
  port?: number;
  /** On top of this process's environment; `undefined` removes a variable. A function gets the app's URL. */
  env?: Record<string, string | undefined> | ((url: string) => Record<string, string | undefined>);
  /** The path that answers 200 once the app serves. */
  readyPath?: string;
  /** Node flags before the entry point, e.g. `--cpu-prof`. */
  execArgv?: string[];
  /** By default the app's stdout is dropped and its stderr shown. */
  stdio?: StdioOptions;
  /** Called as soon as the child exists, before it is ready (a time limit may want to kill it). */
  spawned?: (child: ChildProcess) => void;
  readyTimeoutMs?: number;
  /** The app serves https (its certificate must be trusted by this process to see it ready). */
  https?: boolean;
}

export interface AppProcess {
  url: string;
  port: number;
  request: ReturnType<typeof httpClient>;
  child: ChildProcess;
  /** How the process ended: its signal, else its exit code. */
  exited: Promise<NodeJS.Signals | number | null>;
  /** SIGTERM, then SIGKILL if it has not exited within ten seconds. */
  stop(): Promise<void>;
}

/**
 * Starts an app's entry point (a path such as `apps/api/src/main.ts`, run with tsx) as a child
 * process on a loopback port and waits until it is ready; a child that exits or never becomes
 * ready fails the start and is not left behind.
 */
export async function startAppProcess(entry: string, options: AppProcessOptions): Promise<AppProcess> {
  const port = options.port ?? (await freePort());
  const url = `${options.https ? 'https' : 'http'}://127.0.0.1:${port}`;
  const extra = typeof options.env === 'function' ? options.env(url) : (options.env ?? {});
  const env: NodeJS.ProcessEnv = { ...process.env, [options.portVariable]: String(port) };
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  const child = spawn(process.execPath, [...APP_NODE_FLAGS, ...(options.execArgv ?? []), '--import', 'tsx', entry], {
    env,
    stdio: options.stdio ?? ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  options.spawned?.(child);
  const request = httpClient(url);
  const stop = () => stopChild(child, exited);
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${entry} exited with ${child.signalCode ?? child.exitCode}`);
        return (await request('GET', options.readyPath ?? '/healthz').catch(() => undefined))?.status === 200 || undefined;
      },
      options.readyTimeoutMs ?? 30_000,
      `${entry} on port ${port}`,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, port, request, child, exited, stop };
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const forced = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(forced);
}

/** Runs an app's entry point to its end with only PATH and `env`, e.g. to see it refuse its configuration. */
export function runToExit(entry: string, env: Record<string, string>): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [...APP_NODE_FLAGS, '--import', 'tsx', entry], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, stderr: result.stderr };
}

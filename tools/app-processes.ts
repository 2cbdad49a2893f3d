// The apps `npm start` runs as child processes: restarted when one crashes, and the order in which
// the platform stops.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Env } from '@platform/config';
import { APP_NODE_FLAGS } from '@platform/process';

/** How long an app may drain in-flight requests before it is killed. */
const APP_DRAIN_MS = 5_000;

/** The status an app exits with when its configuration is wrong: a restart would fail the same way. */
const EXIT_CONFIG = 78;

/**
 * When a crashed app is started again. The n-th crash in a row waits firstDelayMs × 2^(n-1) before
 * its restart; a crash counts as "in a row" when the app had run less than stableAfterMs since its
 * last start. The maxCrashes-th crash in a row stops the platform instead: an app that cannot stay
 * up (a port taken, a bug at start-up) would otherwise be restarted for ever.
 */
export interface RestartPolicy {
  firstDelayMs: number;
  maxCrashes: number;
  stableAfterMs: number;
}

export const RESTART_POLICY: RestartPolicy = { firstDelayMs: 1_000, maxCrashes: 5, stableAfterMs: 60_000 };

export interface AppProcessesOptions {
  /** An app keeps crashing (or cannot start with this configuration): the platform must stop. */
  onGiveUp(message: string): void;
  /** A crash and its restart, in words for the operator. */
  log(message: string): void;
  /** An app runs again, as a new process. */
  onRestarted?(name: string, child: ChildProcess): void;
  policy?: RestartPolicy;
  /** Rewrites each line the apps write (their logs) before it reaches this process's output; without it they write there directly. */
  formatLine?(line: string): string;
}

interface App {
  name: string;
  entry: string;
  env: Env;
  child: ChildProcess;
  startedAt: number;
  crashes: number;
  restart: NodeJS.Timeout | null;
}

export class AppProcesses {
  private readonly apps: App[] = [];
  private readonly policy: RestartPolicy;
  private stopping = false;

  constructor(private readonly options: AppProcessesOptions) {
    this.policy = options.policy ?? RESTART_POLICY;
  }

  /** Starts `entry` under tsx; it stops on SIGTERM, and on its own when this process is gone (IPC). */
  start(name: string, entry: string, env: Env): ChildProcess {
    const app: App = { name, entry, env: { ...env }, child: null as unknown as ChildProcess, startedAt: 0, crashes: 0, restart: null };
    this.spawn(app);
    this.apps.push(app);
    return app.child;
  }

  /** SIGTERM to every app (they finish in-flight requests), SIGKILL to any still running after APP_DRAIN_MS. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const app of this.apps) if (app.restart) clearTimeout(app.restart);
    await Promise.all(this.apps.map((app) => stopChild(app.child)));
  }

  private spawn(app: App): void {
    const child = spawn(process.execPath, [...APP_NODE_FLAGS, '--import', 'tsx', app.entry], {
      env: app.env,
      // Own process group: a terminal's Ctrl-C reaches this process, which stops the apps in order;
      // and what the app leaves behind in its group can be ended with it.
      detached: true,
      stdio: ['ignore', this.options.formatLine ? 'pipe' : 'inherit', this.options.formatLine ? 'pipe' : 'inherit', 'ipc'],
    });
    if (this.options.formatLine) {
      relayLines(child.stdout!, process.stdout, this.options.formatLine);
      relayLines(child.stderr!, process.stderr, this.options.formatLine);
    }
    app.child = child;
    app.startedAt = Date.now();
    child.on('exit', (code, signal) => {
      killGroupLeftovers(child);
      if (!this.stopping) this.crashed(app, signal ?? `code ${code}`, code);
    });
  }

  private crashed(app: App, how: string, code: number | null): void {
    if (code === EXIT_CONFIG) {
      this.options.onGiveUp(`${app.name} exited (${how}): its configuration is refused, a restart would fail the same way`);
      return;
    }
    const ranMs = Date.now() - app.startedAt;
    app.crashes = ranMs >= this.policy.stableAfterMs ? 1 : app.crashes + 1;
    if (app.crashes >= this.policy.maxCrashes) {
      const within = `each within ${Math.round(this.policy.stableAfterMs / 1000)} s of its start`;
      this.options.onGiveUp(`${app.name} exited unexpectedly (${how}), ${app.crashes} times in a row (${within}): it keeps crashing`);
      return;
    }
    const delayMs = this.policy.firstDelayMs * 2 ** (app.crashes - 1);
    this.options.log(`${app.name} exited unexpectedly (${how}) after ${formatSeconds(ranMs)}; restarting it in ${formatSeconds(delayMs)} (crash ${app.crashes} in a row; the platform stops at ${this.policy.maxCrashes})`);
    app.restart = setTimeout(() => {
      app.restart = null;
      if (this.stopping) return;
      this.spawn(app);
      this.options.log(`${app.name} restarted (process ${app.child.pid})`);
      this.options.onRestarted?.(app.name, app.child);
    }, delayMs);
  }
}

function relayLines(from: Readable, to: Writable, format: (line: string) => string): void {
  createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(`${format(line)}\n`));
}

function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

/**
 * The app led a process group of its own; whatever of it outlived the app there (a child it did not
 * put in a group of its own, such as a pg_dump) is ended with it.
 */
function killGroupLeftovers(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // nothing left in the group
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = setTimeout(() => child.kill('SIGKILL'), APP_DRAIN_MS);
  child.kill('SIGTERM');
  await exited;
  clearTimeout(deadline);
}

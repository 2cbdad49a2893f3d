// The apps `npm start` runs as child processes, and the order in which the platform stops.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Env } from '@platform/config';

/** How long an app may drain in-flight requests before it is killed. */
const APP_DRAIN_MS = 5_000;

export class AppProcesses {
  private readonly children: ChildProcess[] = [];
  private stopping = false;

  constructor(private readonly onUnexpectedExit: (message: string) => void) {}

  /** Starts `entry` under tsx; it stops on SIGTERM, and on its own when this process is gone (IPC). */
  start(name: string, entry: string, env: Env): ChildProcess {
    const child = spawn(process.execPath, ['--import', 'tsx', entry], {
      env: { ...env },
      // Own process group: a terminal's Ctrl-C reaches this process, which stops the apps in order.
      detached: true,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('exit', (code, signal) => {
      if (!this.stopping) this.onUnexpectedExit(`${name} exited unexpectedly (${signal ?? `code ${code}`})`);
    });
    this.children.push(child);
    return child;
  }

  /** SIGTERM to every app (they finish in-flight requests), SIGKILL to any still running after APP_DRAIN_MS. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.children.map((child) => stopChild(child)));
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

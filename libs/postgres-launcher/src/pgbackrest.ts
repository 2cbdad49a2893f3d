import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ensureCopy } from './reachable-copy.js';
import { REACHABLE_BASE } from './reachable-folder.js';
import { canReadAll, canReach, type ServerAccount } from './server-account.js';

/**
 * The pgBackRest program the server's account can run: `program` itself (tools/pgbackrest.mjs's
 * wrapper, `<install>/bin/pgbackrest`), or, when that account cannot reach it (root with the clone
 * in a private home folder), a copy of its install folder under `cacheDir` named by a digest of the
 * wrapper and its install record. The wrapper names its files relative to itself, so the copy runs.
 */
export function reachablePgbackrest(account: ServerAccount | null, program: string, cacheDir = REACHABLE_BASE): string {
  const wrapper = resolve(program);
  if (!existsSync(wrapper)) throw new Error(`no pgBackRest at ${wrapper}: run node tools/pgbackrest.mjs (README, "Backups")`);
  if (canReach(account, wrapper) && canReadAll(account, [wrapper])) return wrapper;
  const install = dirname(dirname(realpathSync(wrapper)));
  const copy = join(cacheDir, `pgbackrest-${digest(install, wrapper)}`);
  ensureCopy(install, copy, 'a copy of pgBackRest');
  const copied = join(copy, 'bin', 'pgbackrest');
  if (!canReach(account, copied)) throw new Error(`the '${account?.name}' user can reach neither ${wrapper} nor its copy ${copied}`);
  return copied;
}

function digest(install: string, wrapper: string): string {
  const hash = createHash('sha256').update(readFileSync(wrapper));
  const record = join(install, 'installed.json');
  if (existsSync(record)) hash.update(readFileSync(record));
  return hash.digest('hex').slice(0, 16);
}

/** pgBackRest's options from the environment (PGBACKREST_REPO1_S3_KEY...): how an S3 repository is configured. */
export function pgbackrestEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const passed: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (name.startsWith('PGBACKREST_') && value !== undefined) passed[name] = value;
  return passed;
}

export interface PgbackrestRun {
  program: string;
  args: readonly string[];
  account: ServerAccount | null;
  /** A folder the account can enter. */
  cwd: string;
  /** Added to PATH and pgBackRest's own options from this process's environment (never the rest of it: the apps' secrets). */
  env?: Record<string, string>;
  /** Ends the command (SIGTERM: pgBackRest stops cleanly and a later backup resumes what it copied). */
  signal?: AbortSignal;
}

/** A pgBackRest command that failed: its exit status and what it wrote to stderr. */
export class PgbackrestError extends Error {
  constructor(
    readonly command: string,
    readonly status: number | string,
    readonly stderr: string,
  ) {
    super(`pgbackrest ${command} failed (${status}): ${stderr.trim() || 'no message'}`);
  }
}

/**
 * Runs one pgBackRest command as the server's account; answers its stdout. It runs in a process
 * group of its own: a backup's worker processes (`backup:local`) outlive a main process that was
 * ended alone, holding the stanza's lock, so an abort ends the whole group and waits for it.
 */
export function runPgbackrest(run: PgbackrestRun): Promise<string> {
  const command = run.args.find((arg) => !arg.startsWith('-')) ?? '?';
  const child = spawn(run.program, run.args, {
    cwd: run.cwd,
    ...(run.account ? { uid: run.account.uid, gid: run.account.gid } : {}),
    env: { PATH: '/usr/bin:/bin', ...pgbackrestEnvironment(process.env), ...run.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const group = child.pid;
  const stop = () => signalGroup(group, 'SIGTERM');
  run.signal?.addEventListener('abort', stop, { once: true });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise<string>((done, fail) => {
    child.once('error', fail);
    child.once('close', (code, signal) => {
      run.signal?.removeEventListener('abort', stop);
      const settle = () => (code === 0 ? done(stdout) : fail(new PgbackrestError(command, signal ?? code ?? 'unknown', stderr)));
      if (run.signal?.aborted) void groupGone(group).then(settle);
      else settle();
    });
  });
}

function signalGroup(group: number | undefined, signal: NodeJS.Signals): boolean {
  if (group === undefined) return false;
  try {
    process.kill(-group, signal);
    return true;
  } catch {
    return false; // none of it is left
  }
}

/** Waits until no process of the group is left: SIGTERM again, then SIGKILL after 10 s. */
async function groupGone(group: number | undefined): Promise<void> {
  for (let waited = 0; signalGroup(group, waited < 10_000 ? 'SIGTERM' : 'SIGKILL'); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

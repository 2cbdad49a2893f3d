import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { userInfo } from 'node:os';

/** The OS account PostgreSQL runs as when we are root (it refuses to run as root itself). */
export interface ServerAccount {
  name: string;
  uid: number;
  gid: number;
}

const ACCOUNT_NAME = 'postgres';

export function isRoot(): boolean {
  return userInfo().uid === 0;
}

/** Null when not root: the server then runs as the current user. Creates the account when missing. */
export function ensureServerAccount(): ServerAccount | null {
  if (!isRoot()) return null;
  const found = lookUp(ACCOUNT_NAME);
  if (found) return found;
  try {
    execFileSync('groupadd', ['-f', ACCOUNT_NAME], { stdio: 'pipe' });
    execFileSync('useradd', ['--system', '--no-create-home', '-g', ACCOUNT_NAME, ACCOUNT_NAME], { stdio: 'pipe' });
  } catch (error) {
    throw new Error(`PostgreSQL cannot run as root and there is no '${ACCOUNT_NAME}' user; creating one failed: ${(error as Error).message}`);
  }
  const created = lookUp(ACCOUNT_NAME);
  if (!created) throw new Error(`the '${ACCOUNT_NAME}' user was created but cannot be found`);
  return created;
}

function lookUp(name: string): ServerAccount | null {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { name, uid: id('-u'), gid: id('-g') };
  } catch {
    return null;
  }
}

/** A path that does not exist yet is judged by its nearest existing folder, which is where we would create it. */
function nearestExisting(path: string): string {
  let existing = resolve(path);
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
  return existing;
}

/**
 * Whether the account can reach `path` (search every folder on the way; execute a file), asked of
 * the kernel as that account, the way the server itself will be started.
 */
export function canReach(account: ServerAccount | null, path: string): boolean {
  if (!account) return true;
  const probe = spawnSync('test', ['-x', nearestExisting(path)], { uid: account.uid, gid: account.gid, stdio: 'ignore' });
  return probe.status === 0;
}

/**
 * Whether the account can read every one of `paths` (and search those that are folders), asked of
 * the kernel as that account in one process.
 */
export function canReadAll(account: ServerAccount | null, paths: readonly string[]): boolean {
  if (!account) return true;
  const script = 'for path do [ -r "$path" ] || exit 1; [ ! -d "$path" ] || [ -x "$path" ] || exit 1; done';
  const probe = spawnSync('sh', ['-c', script, 'sh', ...paths], { uid: account.uid, gid: account.gid, stdio: 'ignore' });
  return probe.status === 0;
}

/**
 * Whether the embedded server, run as it will be run here, can reach `path`. Creates no account:
 * one that does not exist yet will belong to no group but its own, so only "others" bits count.
 */
export function serverCanReach(path: string): boolean {
  if (!isRoot()) return true;
  const account = lookUp(ACCOUNT_NAME);
  if (account) return canReach(account, path);
  const target = nearestExisting(path);
  for (let folder = target; ; folder = dirname(folder)) {
    if ((statSync(folder).mode & 0o001) === 0) return false;
    if (dirname(folder) === folder) return true;
  }
}

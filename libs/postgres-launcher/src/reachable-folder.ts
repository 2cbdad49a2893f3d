import { chmodSync, lstatSync, mkdtempSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';

/** Where the server's files go when its account cannot reach the caller's (shared by every user). */
export const REACHABLE_BASE = '/var/tmp';

/**
 * Why root must not use `path` as its own (null when it may): it must be a real folder, not a
 * symbolic link, owned by this process's user and writable by nobody else, or another local user
 * could have planted it, or could swap its contents, to make root delete or chown elsewhere.
 */
export function whyNotOurs(path: string): string | null {
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    return 'it does not exist';
  }
  if (stat.isSymbolicLink()) return 'it is a symbolic link';
  if (!stat.isDirectory()) return 'it is not a folder';
  if (stat.uid !== process.getuid?.()) return `it belongs to user ${stat.uid}`;
  if ((stat.mode & 0o022) !== 0) return 'others can write to it';
  return null;
}

/**
 * A folder of ours under REACHABLE_BASE for the server's files: `recorded` (an earlier answer) when
 * it still exists, after checking that every folder from REACHABLE_BASE down is ours alone;
 * otherwise a new one with an unpredictable name. The caller records the answer.
 */
export function reachableFolder(prefix: string, recorded?: string): string {
  if (recorded && lstatExists(recorded)) {
    const below = relative(REACHABLE_BASE, resolve(recorded));
    if (below === '' || below.startsWith('..')) throw new Error(`${recorded} is not under ${REACHABLE_BASE}: remove the record of it and start again`);
    let folder = REACHABLE_BASE;
    for (const part of below.split(sep)) {
      folder = join(folder, part);
      const why = whyNotOurs(folder);
      if (why) throw new Error(`${folder} is not safe for root to use (${why}): remove ${recorded} and start again`);
    }
    return resolve(recorded);
  }
  // mkdtemp creates it with mode 0700; the server's account must enter it.
  const created = mkdtempSync(join(REACHABLE_BASE, prefix));
  chmodSync(created, 0o755);
  return created;
}

function lstatExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

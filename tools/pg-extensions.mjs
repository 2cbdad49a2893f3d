// Puts pgvector for the embedded server's major version in .data/pg-extensions-<major>/:
// share/extension/ (our vector.control and Debian's SQL scripts) and lib/ (vector.so). The launcher
// points extension_control_path and dynamic_library_path of every server it starts there
// (PG_EXTENSIONS_DIR); the npm package of the server ships neither pgvector nor server headers.
//
// The source is Debian's own binary package, postgresql-<major>-pgvector from the suite that has it
// (unstable, by default), fetched over plain HTTP, checked against the SHA256 its index gives, and
// unpacked with dpkg-deb: nothing is installed system-wide and nothing is compiled. That build is
// linked against a newer C library than Debian 12's (2.36), and a .so is loaded into the server's
// process, which runs on the machine's C library, so no private loader can help. What it needs of
// the newer library is checked symbol by symbol. The only kind we accept is C23's renamed strto*
// family (glibc 2.38 gives strtol the name __isoc23_strtol when a program is compiled as C23): the
// two differ only in that the C23 one also reads a "0b" prefix when the base is 0 or 2. Such a
// reference is re-pointed, in our copy of the file, at the machine's own strtol (its name, and its
// version requirement, to the architecture's first glibc version). pgvector 0.8.7 calls it twice,
// both times with base 10, where the two agree. Anything else newer than the machine's C library
// stops the install with the symbols named.
//
// Idempotent: an install of the suite's version is left alone, without looking at the network.
// Usage: node tools/pg-extensions.mjs [--major N] [--refresh]; --refresh asks the suite for its
// current version and installs it when it differs. Environment: PG_EXTENSIONS_SUITE (default sid),
// DEBIAN_MIRROR (default http://deb.debian.org/debian).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEBIAN_MIRROR, download, embeddedMajor, option, packageIndex } from './debian-packages.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Written last: what was installed, from where; its presence marks a finished install. */
const RECORD = 'installed.json';
/** The C23 names glibc 2.38 gives the strto* functions, and the functions they stand for. */
const C23_ALIASES = new Map(['strtol', 'strtoll', 'strtoul', 'strtoull', 'strtoimax', 'strtoumax'].map((name) => [`__isoc23_${name}`, name]));
/** The first glibc version of each architecture: the one every strto* function has there. */
const BASELINE_GLIBC = { x64: 'GLIBC_2.2.5', arm64: 'GLIBC_2.17' };

function readRecord(dir) {
  try {
    const record = JSON.parse(readFileSync(join(dir, RECORD), 'utf8'));
    return record.files.every((file) => existsSync(join(dir, file))) ? record : null;
  } catch {
    return null;
  }
}

/** "GLIBC_2.38" -> [2, 38]; null for a version name of another library. */
function glibcVersion(name) {
  const match = /^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$/.exec(name);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : null;
}

function isNewer(version, than) {
  for (let i = 0; i < 3; i++) if (version[i] !== than[i]) return version[i] > than[i];
  return false;
}

/**
 * The parts of a 64-bit little-endian ELF shared object that say what it needs of other libraries:
 * its dynamic symbols (name, whether undefined, version index), and its version needs.
 */
function readElf(buffer) {
  if (buffer.readUInt32BE(0) !== 0x7f454c46 || buffer[4] !== 2 || buffer[5] !== 1) throw new Error('not a 64-bit little-endian ELF file');
  const sectionsAt = Number(buffer.readBigUInt64LE(0x28));
  const sectionSize = buffer.readUInt16LE(0x3a);
  const sectionCount = buffer.readUInt16LE(0x3c);
  const sections = [];
  for (let i = 0; i < sectionCount; i++) {
    const at = sectionsAt + i * sectionSize;
    sections.push({ type: buffer.readUInt32LE(at + 4), offset: Number(buffer.readBigUInt64LE(at + 0x18)), size: Number(buffer.readBigUInt64LE(at + 0x20)), link: buffer.readUInt32LE(at + 0x28) });
  }
  const ofType = (type) => sections.find((section) => section.type === type);
  const dynsym = ofType(11);
  const versym = ofType(0x6fffffff);
  const verneed = ofType(0x6ffffffe);
  if (!dynsym) throw new Error('no dynamic symbol table');
  const strings = sections[dynsym.link];
  const string = (offset) => {
    const start = strings.offset + offset;
    return buffer.toString('latin1', start, buffer.indexOf(0, start));
  };
  const symbols = [];
  for (let i = 0; i * 24 < dynsym.size; i++) {
    const at = dynsym.offset + i * 24;
    symbols.push({ at, nameOffset: buffer.readUInt32LE(at), name: string(buffer.readUInt32LE(at)), undefined: buffer.readUInt16LE(at + 6) === 0, version: versym ? buffer.readUInt16LE(versym.offset + i * 2) & 0x7fff : 0 });
  }
  const needs = [];
  for (let at = verneed?.offset; at !== undefined; ) {
    const file = string(buffer.readUInt32LE(at + 4));
    let aux = at + buffer.readUInt32LE(at + 8);
    for (let count = buffer.readUInt16LE(at + 2); count > 0; count--) {
      needs.push({ at: aux, file, index: buffer.readUInt16LE(aux + 6), name: string(buffer.readUInt32LE(aux + 8)), nameOffset: buffer.readUInt32LE(aux + 8) });
      aux += buffer.readUInt32LE(aux + 12);
    }
    const next = buffer.readUInt32LE(at + 12);
    at = next === 0 ? undefined : at + next;
  }
  return { symbols, needs };
}

/** The standard ELF hash of a name (a version need records it beside the name). */
function elfHash(name) {
  let hash = 0;
  for (const byte of Buffer.from(name, 'latin1')) {
    hash = ((hash << 4) + byte) >>> 0;
    const high = hash & 0xf0000000;
    if (high) hash ^= high >>> 24;
    hash &= ~high >>> 0;
  }
  return hash >>> 0;
}

/**
 * Makes `buffer` (a shared object) loadable with the machine's C library, or throws naming what it
 * needs that the library lacks. Answers what was re-pointed, e.g. ["__isoc23_strtol -> strtol@GLIBC_2.2.5"].
 */
function fitToMachineLibc(buffer, machineGlibc) {
  const machine = glibcVersion(`GLIBC_${machineGlibc}`);
  const { symbols, needs } = readElf(buffer);
  const newer = needs.filter((need) => need.file === 'libc.so.6' && glibcVersion(need.name) && isNewer(glibcVersion(need.name), machine));
  if (newer.length === 0) return [];
  const baseline = BASELINE_GLIBC[process.arch];
  const baselineNeed = needs.find((need) => need.file === 'libc.so.6' && need.name === baseline);
  const users = symbols.filter((symbol) => newer.some((need) => need.index === symbol.version));
  const unfit = users.filter((symbol) => !symbol.undefined || !C23_ALIASES.has(symbol.name));
  if (unfit.length > 0) {
    const named = unfit.map((symbol) => `${symbol.name}@${newer.find((need) => need.index === symbol.version).name}`);
    throw new Error(
      `vector.so needs ${named.join(', ')} of a newer C library than this machine's ${machineGlibc}; ` +
        'build pgvector from source against this C library instead, or run on a newer system',
    );
  }
  if (!baselineNeed) throw new Error(`vector.so needs no ${baseline}, at which its C23 names would be re-pointed`);
  const changes = [];
  for (const symbol of users) {
    // "__isoc23_strtol" ends with "strtol": the name moves to that suffix of the same string.
    const target = C23_ALIASES.get(symbol.name);
    buffer.writeUInt32LE(symbol.nameOffset + symbol.name.length - target.length, symbol.at);
    changes.push(`${symbol.name} -> ${target}@${baseline}`);
  }
  // The newer version needs now name the baseline, which the machine's library has: no symbol asks for them any more.
  for (const need of newer) {
    buffer.writeUInt32LE(elfHash(baseline), need.at);
    buffer.writeUInt32LE(baselineNeed.nameOffset, need.at + 8);
  }
  const after = readElf(buffer);
  const left = after.needs.filter((need) => need.file === 'libc.so.6' && glibcVersion(need.name) && isNewer(glibcVersion(need.name), machine));
  if (left.length > 0) throw new Error(`vector.so still needs ${left.map((need) => need.name).join(', ')} after re-pointing`);
  return changes;
}

/** Our control file: Debian's, with the module found on dynamic_library_path and creatable by non-superusers. */
function controlFile(debianControl, source) {
  const kept = debianControl.split('\n').filter((line) => line.trim() && !/^\s*(module_pathname|trusted)\s*=/.test(line));
  return [
    `# Written by tools/pg-extensions.mjs from ${source}.`,
    ...kept,
    // Without $libdir/ the server looks for the module on dynamic_library_path, which the launcher sets.
    "module_pathname = 'vector'",
    // Trusted: a role with CREATE on the database may create it; its functions compute over its own types only.
    'trusted = true',
    '',
  ].join('\n');
}

function filesBelow(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

/** The suite's postgresql-<major>-pgvector: its version, where it is, and its SHA256. */
async function findInSuite(major) {
  const suite = process.env.PG_EXTENSIONS_SUITE ?? 'sid';
  const name = `postgresql-${major}-pgvector`;
  const found = (await packageIndex(suite)).get(name);
  if (!found) throw new Error(`Debian ${suite} has no ${name}`);
  return { name, suite, version: found.version, url: `${DEBIAN_MIRROR}/${found.file}`, sha256: found.sha256 };
}

async function install(major, dir, pkg) {
  const deb = await download(pkg.url);
  const sha256 = createHash('sha256').update(deb).digest('hex');
  if (sha256 !== pkg.sha256) throw new Error(`${pkg.url} has SHA256 ${sha256}, not the ${pkg.sha256} Debian's index gives`);
  // Built beside the install and renamed into place, so that a failed run leaves the old one whole.
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    const unpacked = join(partial, 'unpacked');
    mkdirSync(unpacked, { recursive: true });
    writeFileSync(join(partial, 'package.deb'), deb);
    try {
      execFileSync('dpkg-deb', ['-x', join(partial, 'package.deb'), unpacked]);
    } catch (error) {
      throw new Error(error.code === 'ENOENT' ? 'dpkg-deb is missing (it comes with Debian\'s dpkg)' : `dpkg-deb could not unpack ${pkg.url}: ${error.message}`);
    }
    const debianShare = join(unpacked, `usr/share/postgresql/${major}/extension`);
    const debianLib = join(unpacked, `usr/lib/postgresql/${major}/lib/vector.so`);
    if (!existsSync(join(debianShare, 'vector.control')) || !existsSync(debianLib)) throw new Error(`${pkg.name} ${pkg.version} holds no vector.control or vector.so for PostgreSQL ${major}`);

    const share = join(partial, 'share', 'extension');
    mkdirSync(share, { recursive: true });
    for (const file of readdirSync(debianShare).filter((file) => /^vector--.*\.sql$/.test(file))) cpSync(join(debianShare, file), join(share, file));
    const source = `Debian's ${pkg.name} ${pkg.version} (${pkg.suite})`;
    writeFileSync(join(share, 'vector.control'), controlFile(readFileSync(join(debianShare, 'vector.control'), 'utf8'), source));

    const library = readFileSync(debianLib);
    const machineGlibc = process.report.getReport().header.glibcVersionRuntime;
    if (!machineGlibc) throw new Error('this machine has no GNU C library; Debian builds need one');
    const repointed = fitToMachineLibc(library, machineGlibc);
    mkdirSync(join(partial, 'lib'));
    writeFileSync(join(partial, 'lib', 'vector.so'), library);
    chmodSync(join(partial, 'lib', 'vector.so'), 0o755);

    rmSync(unpacked, { recursive: true, force: true });
    rmSync(join(partial, 'package.deb'));
    const files = filesBelow(partial);
    const record = { package: pkg.name, version: pkg.version, suite: pkg.suite, url: pkg.url, sha256: pkg.sha256, glibc: machineGlibc, repointed, files };
    writeFileSync(join(partial, RECORD), `${JSON.stringify(record, null, 2)}\n`);
    const aside = `${dir}.old-${process.pid}`;
    if (existsSync(dir)) renameSync(dir, aside);
    renameSync(partial, dir);
    rmSync(aside, { recursive: true, force: true });
    const note = repointed.length > 0 ? `; re-pointed for this machine's C library ${machineGlibc}: ${repointed.join(', ')}` : '';
    console.log(`pg-extensions: pgvector from ${source} in ${dir}${note}`);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
}

async function main() {
  const major = Number(option('--major') ?? embeddedMajor());
  const dir = join(root, '.data', `pg-extensions-${major}`);
  const installed = readRecord(dir);
  if (installed && !process.argv.includes('--refresh')) return;
  const pkg = await findInSuite(major);
  if (installed?.version === pkg.version && installed.sha256 === pkg.sha256) {
    console.log(`pg-extensions: pgvector ${pkg.version} is Debian ${pkg.suite}'s current one; left as it is`);
    return;
  }
  await install(major, dir, pkg);
}

main().catch((error) => {
  console.error(`pg-extensions: ${error.message}; CREATE EXTENSION vector will fail on the embedded servers until pgvector is in place (see README, "Extensions")`);
  process.exitCode = 1;
});

import { expect } from 'chai';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { libraries } from '../library-manifests.js';

const workspace = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);
const nxBin = join(require.resolve('nx/package.json'), '..', require('nx/package.json').bin.nx);
const tscBin = require.resolve('typescript/bin/tsc');
const rootManifest = JSON.parse(readFileSync(join(workspace, 'package.json'), 'utf8'));

function run(command: string, args: string[], cwd: string): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, NX_DAEMON: 'false' }, timeout: 120_000 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result;
}

function manifestOf(library: string): { name: string; version: string; dependencies?: Record<string, string>; exports?: unknown } {
  return JSON.parse(readFileSync(join(workspace, 'libs', library, 'package.json'), 'utf8'));
}

/** The libraries to pack: the three a team reuses, and every library of ours they depend on. */
function withOurDependencies(libraries: string[]): string[] {
  const found = new Set<string>();
  const visit = (library: string) => {
    if (found.has(library)) return;
    found.add(library);
    for (const name of Object.keys(manifestOf(library).dependencies ?? {})) {
      if (name.startsWith('@platform/')) visit(name.slice('@platform/'.length));
    }
  };
  libraries.forEach(visit);
  return [...found].sort();
}

// What another team would write: it imports the packages by name, mixes their types (the
// domain's PasswordHasher port, implemented by auth) and relies on their declarations. Each
// expected-error directive below must meet an error: were a package's types missing (any), tsc
// would fail on it.
const CONSUMER = `
import { randomBytes } from 'node:crypto';
import { DATABASE_NAME_PATTERN, ConflictError, physicalDatabaseName, type PasswordHasher } from '@platform/domain';
import { ScryptPasswordHasher, SecretBox } from '@platform/auth';
import { BUILT_IN_SCHEMA_VERSION, databaseRoleNames, scramVerifier } from '@platform/data-plane';

const hasher: PasswordHasher = new ScryptPasswordHasher(10);
const hash = await hasher.hash('correct horse battery');
const box = new SecretBox([{ id: 'k1', key: randomBytes(32) }]);
const sealed = box.seal('a client secret', 'row 1');
const roles = databaseRoleNames(physicalDatabaseName('6f1c2a4e-0b8d-4c55-9f1e-3a7d2c9b8e10'));
// @ts-expect-error the role names are read-only, which only the packaged declarations say
roles.owner = 'someone_else';
// @ts-expect-error a database name is a string
DATABASE_NAME_PATTERN.test(42);
const conflict = new ConflictError('database_name_taken', 'taken');

console.log(JSON.stringify({
  names: ['orders', '1orders', 'ok_2'].map((name) => DATABASE_NAME_PATTERN.test(name)),
  passwordVerifies: await hasher.verify('correct horse battery', hash),
  wrongPasswordVerifies: await hasher.verify('wrong', hash),
  opened: box.open(sealed, 'row 1'),
  roles: databaseRoleNames('db_orders'),
  scram: scramVerifier('secret').split('$')[0],
  schemaVersion: typeof BUILT_IN_SCHEMA_VERSION,
  conflict: [conflict.kind, conflict.code, conflict instanceof Error],
}));
`;

describe('the domain, auth and data-plane libraries as packages another team installs', function () {
  this.timeout(180_000);
  let scratch: string;
  let packed: { name: string; filename: string; files: { path: string }[] }[];

  before(function () {
    const libraries = withOurDependencies(['domain', 'auth', 'data-plane']);
    run(process.execPath, [nxBin, 'run-many', '-t', 'build', `--projects=${libraries.join(',')}`, '--output-style=static'], workspace);
    scratch = mkdtempSync(join(tmpdir(), 'platform-packages-'));
    mkdirSync(join(scratch, 'tarballs'));
    packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', join(scratch, 'tarballs'), ...libraries.map((l) => join(workspace, 'libs', l))], workspace).stdout);
  });

  after(function () {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('each tarball holds the manifest, the README and the built JavaScript with its declarations, and no source or test', function () {
    expect(packed.map((p) => p.name)).to.deep.equal(withOurDependencies(['domain', 'auth', 'data-plane']).map((l) => `@platform/${l}`));
    for (const { name, files } of packed) {
      const paths = files.map((f) => f.path);
      expect(paths, name).to.include.members(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts']);
      expect(paths.filter((p) => !/^(package\.json|README\.md|CHANGELOG\.md|dist\/.+\.(js|d\.ts))$/.test(p)), name).to.deep.equal([]);
      expect(paths.filter((p) => p.includes('.test')), name).to.deep.equal([]);
      // TypeScript would fall back to the declarations beside the JavaScript; npm users of other tools would not.
      const exports = manifestOf(name.slice('@platform/'.length)).exports as { '.': { types: string; default: string } };
      expect(paths, name).to.include.members([exports['.'].types.slice(2), exports['.'].default.slice(2)]);
    }
  });

  it('install outside the workspace with their declared dependencies, type-check in a TypeScript project, and run', function () {
    const tarballs = Object.fromEntries(packed.map(({ name, filename }) => [name, `file:tarballs/${filename}`]));
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({
      name: 'consumer', private: true, type: 'module',
      dependencies: tarballs,
      devDependencies: { '@types/node': rootManifest.devDependencies['@types/node'] },
    }, null, 2));
    // From npm's cache when it holds the versions (a workspace's `npm ci` put them there), else the
    // registry. No install scripts: none of these packages needs one.
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock'], scratch);
    writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true,
        skipLibCheck: true, types: ['node'], outDir: 'out', rootDir: 'src',
      },
      include: ['src'],
    }));
    mkdirSync(join(scratch, 'src'));
    writeFileSync(join(scratch, 'src', 'main.ts'), CONSUMER);

    const typecheck = spawnSync(process.execPath, [tscBin, '-p', scratch], { cwd: scratch, encoding: 'utf8' });
    expect(typecheck.stdout + typecheck.stderr).to.equal('');
    expect(typecheck.status).to.equal(0);

    const program = spawnSync(process.execPath, [join(scratch, 'out', 'main.js')], { cwd: scratch, encoding: 'utf8' });
    expect(program.stderr).to.equal('');
    expect(JSON.parse(program.stdout)).to.deep.equal({
      names: [true, false, true],
      passwordVerifies: true,
      wrongPasswordVerifies: false,
      opened: 'a client secret',
      roles: { owner: 'db_orders_owner', tenant: 'db_orders_tenant', admin: 'db_orders_admin', scoped: 'db_orders_scoped' },
      scram: 'SCRAM-SHA-256',
      schemaVersion: 'number',
      conflict: ['conflict', 'database_name_taken', true],
    });
  });
});

describe('nx release', function () {
  this.timeout(120_000);

  it('versions each library on its own and previews its changelog, changing nothing in a dry run', function () {
    const before = run('git', ['status', '--porcelain'], workspace).stdout;
    // Colours stripped: under an Nx task (npm test) Nx colours its output even into a pipe.
    const dryRun = stripVTControlCharacters(run(process.execPath, [nxBin, 'release', '--dry-run', '--skip-publish'], workspace).stdout);
    const all = libraries(workspace);
    expect(all.filter((l) => l.released)).to.have.length.greaterThan(10);
    for (const { dir: library } of all.filter((l) => l.released)) {
      expect(dryRun, library).to.match(new RegExp(`${library} ✍️ +New version \\S+ written to manifest: libs/${library}/package.json`));
      expect(dryRun, library).to.include(`Previewing an entry in libs/${library}/CHANGELOG.md for ${library}@`);
    }
    // Test libraries are never released.
    for (const { dir: library } of all.filter((l) => !l.released)) expect(dryRun).not.to.include(`libs/${library}/`);
    expect(run('git', ['status', '--porcelain'], workspace).stdout).to.equal(before);
  });
});

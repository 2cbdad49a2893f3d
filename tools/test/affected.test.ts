import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const workspace = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);
const nxBin = join(require.resolve('nx/package.json'), '..', require('nx/package.json').bin.nx);

function nx(args: string[]): string {
  const result = spawnSync(process.execPath, [nxBin, ...args], { cwd: workspace, encoding: 'utf8', env: { ...process.env, NX_DAEMON: 'false' }, timeout: 60_000 });
  if (result.status !== 0) throw new Error(`nx ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

type Graph = Map<string, Set<string>>;

/** Each project and the projects that depend on it, directly or through others, itself included. */
function dependentsOf(project: string, dependencies: Graph): string[] {
  const found = new Set([project]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [dependent, targets] of dependencies) {
      if (!found.has(dependent) && [...targets].some((target) => found.has(target))) {
        found.add(dependent);
        grew = true;
      }
    }
  }
  return [...found].sort();
}

/** The projects' dependencies as Nx's graph has them. */
function nxGraph(): Graph {
  const scratch = mkdtempSync(join(tmpdir(), 'platform-graph-'));
  try {
    nx(['graph', `--file=${join(scratch, 'graph.json')}`]);
    const { graph } = JSON.parse(readFileSync(join(scratch, 'graph.json'), 'utf8')) as {
      graph: { nodes: Record<string, unknown>; dependencies: Record<string, { target: string }[]> };
    };
    return new Map(Object.keys(graph.nodes).map((name) => [name, new Set(graph.dependencies[name].map((d) => d.target).filter((t) => t in graph.nodes))]));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The same, found without Nx: every file git knows (or would add) belongs to the project whose
 * folder holds it most closely, and depends on the libraries it imports by their package names
 * and on the projects its project.json names as implicit dependencies (the API bundles the
 * console's sources at its start, without importing them).
 */
function importGraph(): Graph {
  const files = spawnSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: workspace, encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  const roots = new Map<string, string>();
  const implicit = new Map<string, string[]>();
  for (const file of files.filter((f) => f.endsWith('/project.json'))) {
    const project = JSON.parse(readFileSync(join(workspace, file), 'utf8')) as { name: string; implicitDependencies?: string[] };
    roots.set(dirname(file), project.name);
    implicit.set(project.name, project.implicitDependencies ?? []);
  }
  const libraries = new Map([...roots].filter(([root]) => root.startsWith('libs/')).map(([root, name]) => [`@platform/${root.slice('libs/'.length)}`, name]));
  const graph: Graph = new Map([...roots.values()].map((name) => [name, new Set<string>(implicit.get(name))]));
  for (const file of files.filter((f) => /\.(ts|tsx|mts|js|mjs)$/.test(f))) {
    const owner = [...roots.keys()].filter((root) => file.startsWith(`${root}/`)).sort((a, b) => b.length - a.length)[0];
    if (!owner) continue;
    const { importedFiles } = ts.preProcessFile(readFileSync(join(workspace, file), 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      const target = libraries.get(fileName.split('/').slice(0, 2).join('/'));
      if (target && target !== roots.get(owner)) graph.get(roots.get(owner)!)!.add(target);
    }
  }
  return graph;
}

describe('nx affected: a change in one library selects exactly that library and what depends on it', function () {
  this.timeout(120_000);
  let fromNx: Graph;
  let fromImports: Graph;

  before(function () {
    fromNx = nxGraph();
    fromImports = importGraph();
  });

  it('Nx\'s graph has the dependencies the imports say, no more and no fewer', function () {
    expect([...fromNx.keys()].sort()).to.deep.equal([...fromImports.keys()].sort());
    for (const [project, targets] of fromImports) expect([...fromNx.get(project)!].sort(), project).to.deep.equal([...targets].sort());
  });

  for (const library of ['auth', 'domain', 'postgres-launcher']) {
    it(`a change in libs/${library} selects ${library} and its dependents`, function () {
      const affected = (JSON.parse(nx(['show', 'projects', '--affected', `--files=libs/${library}/src/index.ts`, '--json'])) as string[]).sort();
      expect(affected).to.deep.equal(dependentsOf(library, fromImports));
      expect(affected).to.deep.equal(dependentsOf(library, fromNx));
    });
  }

  it('what a change in auth selects: the apps that sign tokens and the tests that use them, not what auth itself uses', function () {
    const selected = dependentsOf('auth', fromImports);
    expect(selected).to.include.members(['auth', 'api', 'oauth']);
    expect(selected).not.to.include('domain');
    expect(selected).not.to.include('config');
  });
});

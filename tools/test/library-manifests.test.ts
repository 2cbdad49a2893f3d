import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { manifestProblems, writeManifests } from '../library-manifests.js';

const workspace = fileURLToPath(new URL('../..', import.meta.url));

describe('library manifests', function () {
  it('every library\'s package.json and README "Package" section say what it imports (else: npm run manifests -- --write)', function () {
    expect(manifestProblems(workspace)).to.deep.equal([]);
  });

  describe('in a workspace of three libraries', function () {
    let root: string;

    function write(path: string, content: unknown): void {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    }

    function manifest(library: string): Record<string, unknown> {
      return JSON.parse(readFileSync(join(root, 'libs', library, 'package.json'), 'utf8'));
    }

    beforeEach(function () {
      root = mkdtempSync(join(tmpdir(), 'platform-manifests-'));
      write('package.json', {
        name: 'root', engines: { node: '>=22.17' },
        dependencies: { jose: '6.2.17', pg: '8.23.1' },
        devDependencies: { '@types/pg': '8.23.1', chai: '6.3.0' },
      });
      write('tsconfig.base.json', { compilerOptions: { paths: { '@platform/a': [], '@platform/b': [], '@platform/t': [] } } });
      write('libs/a/project.json', { name: 'a', tags: ['type:auth'] });
      write('libs/a/README.md', '# @platform/a\n\nSigns things.\n\n## Notes\n\nKept.\n');
      write('libs/a/src/index.ts', "import { SignJWT } from 'jose';\nimport type { Pool } from 'pg';\nimport { b } from '@platform/b';\nimport { readFileSync } from 'node:fs';\nexport { SignJWT, b, readFileSync };\nexport type { Pool };\n");
      write('libs/a/src/index.test.ts', "import { expect } from 'chai';\nimport { t } from '@platform/t';\n");
      write('libs/b/project.json', { name: 'b', tags: ['type:domain'] });
      write('libs/b/src/index.ts', 'export const b = 1;\n');
      write('libs/t/project.json', { name: 't', tags: ['type:testing'] });
      write('libs/t/src/index.ts', 'export const t = 1;\n');
    });

    afterEach(function () {
      rmSync(root, { recursive: true, force: true });
    });

    it('--write gives each released library a manifest of what its shipped files import, the test library none', function () {
      expect(manifestProblems(root)).to.deep.equal([
        'a has no package.json',
        'a/README.md: its "Package" section is missing or out of date',
        'b has no package.json',
        'b/README.md: its "Package" section is missing or out of date',
      ]);
      writeManifests(root);
      expect(manifestProblems(root)).to.deep.equal([]);
      expect(manifest('a')).to.deep.equal({
        name: '@platform/a',
        version: '0.1.0',
        type: 'module',
        exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' }, './package.json': './package.json' },
        files: ['dist', 'CHANGELOG.md'],
        engines: { node: '>=22.17' },
        // No chai and no @platform/t: only tests import them. @types/pg, because pg's types are in a's.
        dependencies: { '@platform/b': '0.1.0', '@types/pg': '8.23.1', jose: '6.2.17', pg: '8.23.1' },
      });
      expect(manifest('b').dependencies).to.deep.equal({});
      expect(() => manifest('t')).to.throw(/ENOENT/);
      const readme = readFileSync(join(root, 'libs/a/README.md'), 'utf8');
      expect(readme).to.match(/^# @platform\/a\n\nSigns things\.\n\n## Notes\n\nKept\.\n\n## Package\n\n`@platform\/a`, released on its own/);
      expect(readme).to.include('It depends on `@platform/b` of ours and on `jose`, `pg` (exact versions');
      expect(readFileSync(join(root, 'libs/b/README.md'), 'utf8')).to.include("It depends on no other package: Node's built-in modules only.");
    });

    it('names an import added without its dependency, and keeps a version a release wrote', function () {
      writeManifests(root);
      write('libs/b/package.json', { ...manifest('b'), version: '0.3.0' });
      write('libs/a/src/extra.ts', "import { object } from 'superstruct';\nimport { randomUUID } from 'crypto';\nexport { object, randomUUID };\n");
      write('libs/a/src/helper.ts', "export { t } from '@platform/t';\n");
      expect(manifestProblems(root)).to.deep.equal([
        'a imports the test library @platform/t outside its tests; a released package cannot depend on it',
        'a imports superstruct, which the root package.json does not list',
        'a/package.json: "dependencies" is {"@platform/b":"0.1.0","@types/pg":"8.23.1","jose":"6.2.17","pg":"8.23.1"}, should be {"@platform/b":"0.3.0","@types/pg":"8.23.1","jose":"6.2.17","pg":"8.23.1"}',
      ]);
      writeManifests(root);
      expect(manifest('b').version).to.equal('0.3.0');
      expect((manifest('a').dependencies as Record<string, string>)['@platform/b']).to.equal('0.3.0');
    });

    it('names a test library given a manifest, and a manifest whose exports were edited by hand', function () {
      writeManifests(root);
      write('libs/t/package.json', { name: '@platform/t', version: '0.1.0' });
      write('libs/b/package.json', { ...manifest('b'), exports: './src/index.ts' });
      expect(manifestProblems(root)).to.deep.equal([
        'b/package.json: "exports" is "./src/index.ts", should be {".":{"types":"./dist/index.d.ts","default":"./dist/index.js"},"./package.json":"./package.json"}',
        't is a test library (tag type:testing) and is never released: remove its package.json',
      ]);
    });
  });
});

// Bundles an app's entry point into one runnable ES module (npm packages stay external):
// `node dist/apps/api/main.js` then runs without tsx.
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const [entry, outDir] = process.argv.slice(2);
let buildHash = process.env.BUILD_HASH;
try {
  buildHash ??= execSync('git rev-parse --short HEAD', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
} catch {
  buildHash = 'unknown';
}
mkdirSync(outDir, { recursive: true });
await build({
  entryPoints: [entry],
  outfile: `${outDir}/main.js`,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  packages: 'external',
  sourcemap: true,
  tsconfig: 'tsconfig.base.json',
  define: { 'process.env.BUILD_HASH': JSON.stringify(buildHash) },
});
writeFileSync(`${outDir}/package.json`, JSON.stringify({ type: 'module' }, null, 2) + '\n');

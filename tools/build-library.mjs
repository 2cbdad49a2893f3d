// Builds one library into its own dist folder (JavaScript and declarations, what its package.json
// exports), emptied first so that a file deleted from src cannot linger in a packed tarball.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [projectRoot] = process.argv.slice(2);
if (!projectRoot) {
  console.error('usage: node tools/build-library.mjs <library root>');
  process.exit(2);
}
rmSync(join(projectRoot, 'dist'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(projectRoot, 'tsconfig.lib.json')], { stdio: 'inherit' });
process.exit(result.status ?? 1);

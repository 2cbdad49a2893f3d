import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readExtensionsDir } from '@platform/config';

/**
 * The extensions folder (PG_EXTENSIONS_DIR) for a test of pgvector, when pgvector is in it. When it
 * is not: under CI (where tools/run-tests.mjs installs it) the test fails, elsewhere it is skipped
 * with the reason printed. `skip` is mocha's `this.skip`.
 */
export function requirePgvector(skip: () => void, env: NodeJS.ProcessEnv = process.env): string {
  const dir = readExtensionsDir(env);
  if (existsSync(join(dir, 'share', 'extension', 'vector.control')) && existsSync(join(dir, 'lib', 'vector.so'))) return dir;
  const why = `pgvector is not in ${dir} (PG_EXTENSIONS_DIR): run node tools/pg-extensions.mjs (README, "Extensions")`;
  if (env.CI === 'true') throw new Error(why);
  console.log(`      skipped: ${why}`);
  skip(); // skip reason: pgvector not fetched on this machine (outside CI only; the line above prints why)
  throw new Error(why);
}

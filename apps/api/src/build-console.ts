// The API's build step for its web console: `nx build api` writes the console's bundle (Preact,
// uPlot and apps/console, minified by esbuild) beside the built API, which then serves it as it is.
import { bundleConsole } from './console.js';

const [outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node --import tsx apps/api/src/build-console.ts <dir>');
  process.exit(2);
}
const { script, style } = await bundleConsole(outDir);
console.log(`console bundle: ${outDir}/console.js (${script.length} bytes), console.css (${style.length} bytes)`);

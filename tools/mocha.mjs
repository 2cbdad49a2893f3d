// Runs one project's mocha suite and records its counts in tmp/test-results/<project>.json,
// so that tools/run-tests.mjs can print one total line for the whole workspace.
import { globSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { register } from 'tsx/esm/api';
import Mocha from 'mocha';

const [project, ...patterns] = process.argv.slice(2);
if (!project || patterns.length === 0) {
  console.error('usage: node tools/mocha.mjs <project> <glob> [glob...]');
  process.exit(2);
}

register();
const files = patterns.flatMap((pattern) => globSync(pattern)).sort();
const mocha = new Mocha({
  reporter: 'spec',
  timeout: 30_000,
  forbidOnly: Boolean(process.env.CI),
});
for (const file of files) mocha.addFile(resolve(file));

const counts = { project, passed: 0, failed: 0, skipped: 0, failures: [], seconds: 0, files: [] };
const started = Date.now();
await mocha.loadFilesAsync();
const runner = mocha.run((failures) => {
  counts.failed = Math.max(counts.failed, failures);
  counts.seconds = Math.round((Date.now() - started) / 1000);
  counts.files.sort((a, b) => b.seconds - a.seconds);
  mkdirSync('tmp/test-results', { recursive: true });
  writeFileSync(`tmp/test-results/${project}.json`, JSON.stringify(counts));
  process.exitCode = failures > 0 ? 1 : 0;
  // The results are written. A suite that left something open (a child process, a socket, a
  // timer) would keep this process, and CI behind it, waiting for ever: say what and end.
  setTimeout(() => {
    const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    console.error(`mocha.mjs: ${project}: still running 30 s after its suite ended, held by ${open.join(', ')}; exiting`);
    process.exit();
  }, 30_000).unref();
});
runner.on('pass', () => counts.passed++);
// The titles and first lines of the errors travel to the summary: CI keeps only the tail of its log.
runner.on('fail', (test, error) => {
  counts.failed++;
  const message = String(error?.message ?? error).split('\n')[0].slice(0, 300);
  counts.failures.push(`${test.fullTitle()}: ${message}`);
});
runner.on('pending', () => counts.skipped++);
// How long each file took, from its first hook to its last (the suite's time is mostly a few files).
const fileStarts = new Map();
runner.on('suite', (suite) => {
  if (suite.file && !fileStarts.has(suite.file)) fileStarts.set(suite.file, Date.now());
});
runner.on('suite end', (suite) => {
  if (suite.file && suite.parent?.root) {
    const seconds = Math.round((Date.now() - fileStarts.get(suite.file)) / 1000);
    const name = suite.file.slice(process.cwd().length + 1);
    const known = counts.files.find((entry) => entry.file === name);
    if (known) known.seconds = seconds;
    else counts.files.push({ file: name, seconds });
  }
});

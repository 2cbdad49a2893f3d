// Runs one project's mocha suite and records its counts in tmp/test-results/<project>.json,
// so that tools/run-tests.mjs can print one total line for the whole workspace.
//
// `--apart <glob>` runs those files in a second process beside this one (recorded as
// <project>.apart, its output printed after this one's): a project whose files are most of the
// suite's time would otherwise be its critical path on its own.
import { spawn } from 'node:child_process';
import { globSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';
import Mocha from 'mocha';

const [project, ...rest] = process.argv.slice(2);
const patterns = [];
const apartPatterns = [];
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === '--apart') apartPatterns.push(rest[++i]);
  else patterns.push(rest[i]);
}
if (!project || patterns.length === 0 || apartPatterns.includes(undefined)) {
  console.error('usage: node tools/mocha.mjs <project> <glob> [glob...] [--apart <glob>]...');
  process.exit(2);
}

register();
const apartFiles = [...new Set(apartPatterns.flatMap((pattern) => globSync(pattern)).map((file) => resolve(file)))].sort();
for (const pattern of apartPatterns) {
  if (globSync(pattern).length === 0) {
    console.error(`mocha.mjs: --apart '${pattern}' matches no file (renamed?)`);
    process.exit(2);
  }
}
const files = patterns
  .flatMap((pattern) => globSync(pattern))
  .map((file) => resolve(file))
  .filter((file) => !apartFiles.includes(file))
  .sort();
const apart = apartFiles.length > 0 ? runApart(apartFiles) : null;

/** The files apart, in a process of their own; its output is kept for the end (two suites' lines would interleave). */
function runApart(paths) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), `${project}.apart`, ...paths], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = [];
  // Stopped with this process (CI's time limit, Ctrl-C), not left running on its own.
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      child.kill(signal);
      process.exit(1);
    });
  }
  child.stdout.on('data', (chunk) => output.push(chunk));
  child.stderr.on('data', (chunk) => output.push(chunk));
  return new Promise((done) => child.on('close', (code, signal) => done({ code: signal ? 1 : code, output: Buffer.concat(output) })));
}
const mocha = new Mocha({
  reporter: 'spec',
  timeout: 30_000,
  forbidOnly: Boolean(process.env.CI),
});
for (const file of files) mocha.addFile(resolve(file));

const counts = { project, passed: 0, failed: 0, skipped: 0, failures: [], seconds: 0, files: [] };
const started = Date.now();
await mocha.loadFilesAsync();
const runner = mocha.run(async (failures) => {
  counts.failed = Math.max(counts.failed, failures);
  counts.seconds = Math.round((Date.now() - started) / 1000);
  counts.files.sort((a, b) => b.seconds - a.seconds);
  mkdirSync('tmp/test-results', { recursive: true });
  writeFileSync(`tmp/test-results/${project}.json`, JSON.stringify(counts));
  process.exitCode = failures > 0 ? 1 : 0;
  if (apart) {
    const { code, output } = await apart;
    process.stdout.write(`\n${project}: the files run apart (${apartFiles.length}), beside the above:\n`);
    process.stdout.write(output);
    if (code !== 0) process.exitCode = 1;
  }
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

// The README's test command: runs every project's tests through Nx, then prints one line,
// "N passed, N failed", added up from what each project's run recorded.
// Extra arguments go to Nx, e.g. `npm test -- --projects=domain` or `npm test -- affected`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';

const args = process.argv.slice(2);
const mode = args[0] === 'affected' ? ['affected', ...args.slice(1)] : ['run-many', ...args];
rmSync('tmp/test-results', { recursive: true, force: true });

// Dedicated compute's tests move databases with pg_dump and pg_restore of the servers' major; a
// failure to fetch them is reported here and shows in those tests.
spawnSync(process.execPath, ['tools/pg-client-tools.mjs'], { stdio: 'inherit' });
// The embedded servers' tests of pgvector fail under CI without it; a failure to fetch it is reported here.
spawnSync(process.execPath, ['tools/pg-extensions.mjs'], { stdio: 'inherit' });
// The backup tests (libs/postgres-launcher, apps/api) run pgBackRest and fail under CI without it.
spawnSync(process.execPath, ['tools/pgbackrest.mjs'], { stdio: 'inherit' });

const nx = spawnSync('nx', [...mode, '-t', 'test', '--output-style=static'], {
  stdio: 'inherit',
  env: { ...process.env, NX_DAEMON: 'false' },
});

const listed = spawnSync('nx', ['show', 'projects', '--with-target', 'test', '--json'], { encoding: 'utf8' });
const projects = JSON.parse(listed.stdout || '[]');
let passed = 0;
let failed = 0;
let skipped = 0;
const recorded = new Set();
const failures = [];
const timings = [];
if (existsSync('tmp/test-results')) {
  for (const file of readdirSync('tmp/test-results')) {
    const counts = JSON.parse(readFileSync(`tmp/test-results/${file}`, 'utf8'));
    recorded.add(counts.project);
    passed += counts.passed;
    failed += counts.failed;
    skipped += counts.skipped;
    for (const failure of counts.failures ?? []) failures.push(`${counts.project}: ${failure}`);
    timings.push(counts);
  }
}
// A project whose run crashed before recording counts is one failure, not silence.
if (nx.status !== 0 && mode[0] === 'run-many' && !args.some((a) => a.startsWith('--projects'))) {
  for (const project of projects) {
    if (!recorded.has(project)) {
      console.error(`test run of ${project} recorded no results`);
      failed++;
    }
  }
}
// Where the time went: each project's wall time and its slowest files (the suite must stay under 10 minutes).
timings.sort((a, b) => (b.seconds ?? 0) - (a.seconds ?? 0));
for (const { project, seconds, files } of timings) {
  const slowest = (files ?? []).slice(0, 3).map(({ file, seconds: s }) => `${file.split('/').pop()} ${s} s`);
  console.log(`time: ${project} ${seconds ?? '?'} s${slowest.length ? ` (${slowest.join(', ')})` : ''}`);
}
if (failures.length > 0) console.error(`failed tests:\n${failures.map((failure) => `  ${failure}`).join('\n')}`);
if (nx.status !== 0 && failed === 0) failed = 1;
// On a line of its own: Nx may exit before a pipe has taken all of the last project's output
// (seen in CI: its tail cut mid-line, this line glued to it and then missed by .ci/run).
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || nx.status !== 0 ? 1 : 0);

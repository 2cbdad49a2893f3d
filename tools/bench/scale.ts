// `npm run bench:scale [-- --databases 1000 --seconds 10 --rounds 3]`: the platform at scale (issue 15), the API
// as a separate process over its own embedded PostgreSQL (or DATABASE_URL's server), loopback only,
// within a time limit. It builds, through the API, `--databases` databases; one of them ("big") gets
// 10,000 tenants and 100,000 users by bulk load (the shape: every user in one tenant, the first
// tenant with 10,000 members), and two users who sign in are created through the API, one then
// linked to 500 tenants, one to 3. Then, same run:
//   at rest   how busy the machine is with every database idle
//   reads     a member's GET D/tenants (user tokens, one member per database, made through the API)
//             round-robin over 1, 50, 100 and 500 databases at 50 and 200 concurrent requests
//             (autocannon), sampling the API's PostgreSQL sessions meanwhile; each database is
//             read once first (timed: the cost of opening its connection), so runs measure reuse
//   pages     GET D/tenants?limit=1000 on big, and GET T/users?limit=1000 of its 10,000-member tenant
//   unrelated a member's GET D/tenants of another database alone, then while 4 clients page through
//             big's tenants with a developer token (in a process of their own, pagers.ts, so that
//             taking in their pages does not delay autocannon's own event loop)
//   member    the user in 500 tenants reading GET D/tenants, against a naive Koa + pg handler
//             (naive-server.ts) returning the same rows; and the user in 3 tenants
//   memory    the API's RSS once every database has been read
// Exits 0 when every goal of the issue is met, 1 otherwise (or on a failure).
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Result } from 'autocannon';
import pg from 'pg';
import { CONNECTION_BUDGET_DEFAULTS } from '@platform/data-plane';
import { startAppProcess, type AppProcess } from '@platform/test-fixtures';
import { query } from '@platform/testing';
import { describe, load, machineBusy, median, readEachOnce, rssMb, runPagers, sessionsOpened, STATS_SETTLE_MS, watchSessions, type Read } from './scale-measures.js';
import { audience, createUser, expectStatus, issuer, sleep, startApiProcess, startControlPlane, Teardown, timeLimit, track, type Request } from './support.js';

const { values: flags } = parseArgs({
  options: {
    databases: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
  },
});
const DATABASES = Number(flags.databases);
const SECONDS = Number(flags.seconds);
const ROUNDS = Number(flags.rounds);
if (!Number.isInteger(DATABASES) || DATABASES < 2 || DATABASES > 1000 || !Number.isInteger(SECONDS) || SECONDS < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 20) {
  throw new Error('--databases takes a whole number from 2 to 1000, --seconds a positive one, --rounds one from 1 to 20');
}
const WARMUP_SECONDS = 2;
const SPREADS = [1, 50, 100, 500].filter((spread) => spread < DATABASES);
const CONCURRENCY = [50, 200];
const BUDGET = CONNECTION_BUDGET_DEFAULTS.connectionsPerCluster;
const GOALS = { spread100VersusOne: 0.7, pageP99Ms: 50, unrelatedP99Factor: 2, memberVersusNaive: 0.8, rssMb: 500 };

const WORKSPACE = 'scale';
const name = (i: number) => `s${String(i).padStart(4, '0')}`;
const path = (i: number) => `/workspaces/${WORKSPACE}/databases/${name(i)}`;

interface Measured {
  label: string;
  result: Result;
}

/** One run of member reads, and the API's sessions meanwhile. */
interface ReadRun {
  result: Result;
  sessions: number;
  opened: number;
}

/** In each of databases 1..count: a tenant and a member who signs in; answers their reads of GET D/tenants. */
async function membersOf(request: Request, token: string, count: number): Promise<Read[]> {
  const reads: Read[] = [];
  let next = 1;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i <= count; i = next++) {
        const created = await request('POST', `${path(i)}/tenants`, { token, json: { name: 'only' } });
        expectStatus(created, 201, `tenant in ${name(i)}`);
        const credentials = { email: `member${i}@scale.test`, password: 'scale-bench-password' };
        await createUser(request, token, `${path(i)}/tenants/${created.body.id}`, credentials);
        const login = await request('POST', `${path(i)}/users/login`, { json: credentials });
        expectStatus(login, 200, `login in ${name(i)}`);
        reads[i - 1] = { path: `${path(i)}/tenants`, token: login.body.token.jwt as string };
      }
    }),
  );
  return reads;
}

/** Provisions the databases through the API, `concurrency` at a time, and waits until all are READY. */
async function provision(request: Request, token: string, concurrency: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < DATABASES; i = next++) {
        expectStatus(await request('POST', `/workspaces/${WORKSPACE}/databases`, { token, json: { databaseName: name(i), region: 'AWS_US_WEST_2' } }), 201, `create ${name(i)}`);
      }
    }),
  );
  for (let waited = 0; ; waited += 1000) {
    const listed = await request('GET', `/workspaces/${WORKSPACE}/databases?limit=1000`, { token });
    const ready = (listed.body as { status: string }[]).filter((database) => database.status === 'READY').length;
    if (ready === DATABASES) return;
    if (waited > 20 * 60_000) throw new Error(`only ${ready} of ${DATABASES} databases READY after 20 minutes`);
    await sleep(1000);
  }
}

/** 10,000 tenants and 100,000 users in one database: every user in one tenant, the first tenant with 10,000 members. */
async function bulkLoad(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`insert into public.tenants (name, created) select 'tenant ' || i, now() - make_interval(secs => 20000 - i) from generate_series(1, 10000) i`);
    await client.query(`insert into users.users (email, created) select 'bulk' || i || '@scale.test', now() - make_interval(secs => 200000 - i) from generate_series(1, 100000) i`);
    await client.query(`
      with t as (select id, row_number() over (order by created, id) - 1 as n from public.tenants),
           u as (select id, row_number() over (order by created, id) - 1 as n from users.users)
      insert into users.tenant_users (tenant_id, user_id)
      select t.id, u.id from u join t on t.n = u.n % 10000
      union all
      select (select id from t where n = 0), u.id from u where u.n < 10000 and u.n % 10000 <> 0`);
    await client.query('analyze');
  } finally {
    await client.end();
  }
}

function startNaive(databaseUrl: string, publicJwk: object): Promise<AppProcess> {
  return startAppProcess(fileURLToPath(new URL('./naive-server.ts', import.meta.url)), {
    portVariable: 'NAIVE_PORT',
    env: {
      NAIVE_DATABASE_URL: databaseUrl,
      NAIVE_QUERY: 'member-tenants',
      NAIVE_PUBLIC_JWK: JSON.stringify(publicJwk),
      NAIVE_POOL_SIZE: String(CONNECTION_BUDGET_DEFAULTS.connectionsPerDatabase),
      NAIVE_ISSUER: issuer,
      NAIVE_AUDIENCE: audience,
    },
    readyPath: '/ready',
    stdio: ['ignore', 'inherit', 'inherit'],
    spawned: track,
  });
}

const teardown = new Teardown();
const cancelLimit = timeLimit(3600, teardown.run);
let exitCode = 1;
try {
  const { postgres, controlPlane } = await startControlPlane(teardown);
  const api = teardown.add(await startApiProcess(controlPlane, { LOG_LEVEL: 'error', PASSWORD_HASH_LOGN: '10' }));
  const { request } = api;
  const { token } = await controlPlane.newDeveloper({ ttlSeconds: 7200 });
  expectStatus(await request('POST', '/workspaces', { token, json: { name: WORKSPACE, slug: WORKSPACE } }), 201, 'create workspace');
  let started = performance.now();
  await provision(request, token, 4);
  console.log(`${DATABASES} databases READY in ${((performance.now() - started) / 1000).toFixed(0)} s`);

  const [{ physical_name: bigName }] = await query<{ physical_name: string }>(controlPlane.url, `select physical_name from databases where name = $1 and deleted is null`, [name(0)]);
  started = performance.now();
  await bulkLoad(postgres.urlFor(bigName));
  console.log(`big (${name(0)}): 10,000 tenants, 100,000 users bulk-loaded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const tenantsOfBig = (await request('GET', `${path(0)}/tenants?limit=1000`, { token })).body as { id: string }[];
  const crowded = tenantsOfBig[0].id;
  const admin = teardown.add(new pg.Client({ connectionString: postgres.urlFor(bigName) }), (client) => client.end());
  await admin.connect();

  // The two users who sign in, through the API; the many memberships by bulk.
  const signIn = async (email: string, tenants: number) => {
    const credentials = { email, password: 'scale-bench-password' };
    const id = await createUser(request, token, `${path(0)}/tenants/${tenantsOfBig[1].id}`, credentials);
    await admin.query(
      `insert into users.tenant_users (tenant_id, user_id) select id, $1 from public.tenants where id <> $2 order by created, id offset 2 limit $3`,
      [id, tenantsOfBig[1].id, tenants - 1],
    );
    const login = await request('POST', `${path(0)}/users/login`, { json: credentials });
    expectStatus(login, 200, `login ${email}`);
    return login.body.token.jwt as string;
  };
  const many = await signIn('many@scale.test', 500);
  const few = await signIn('few@scale.test', 3);

  const measured: Measured[] = [];
  const run = async (label: string, target: () => Promise<Result>): Promise<Result> => {
    const result = await target();
    measured.push({ label, result });
    console.log(`${label.padEnd(52)} ${describe(result)}`);
    return result;
  };

  // A member's reads over 1 to 500 databases (never big), with the API's sessions sampled.
  started = performance.now();
  const members = await membersOf(request, token, Math.max(...SPREADS));
  console.log(`a member who signs in, in each of ${members.length} databases, through the API: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  // What the platform costs the machine at rest with this many databases (the autovacuum
  // launcher's visits, mostly), once the set-up's work has settled: idle connections stay open
  // (DATA_PLANE_IDLE_MS is minutes) and cost the server nothing while they sleep.
  await sleep(10_000);
  const idleBusy = await machineBusy(20_000);
  console.log(`machine busy at rest with ${DATABASES} databases: ${(idleBusy * 100).toFixed(1)}% of its CPU time (20 s)`);
  const sessions = teardown.add(new pg.Client({ connectionString: postgres.adminUrl }), (client) => client.end());
  await sessions.connect();
  // Rounds of every spread and concurrency in turn: a ratio is taken within a round (runs minutes
  // apart on a shared machine differ by more than the goal's margin), and the median round counts.
  const reads = new Map<string, ReadRun[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const concurrency of CONCURRENCY) {
      for (const spread of SPREADS) {
        const spreadReads = members.slice(0, spread);
        // Steady state: every database of the spread read once (its connection open), then warm-up.
        const firstReads = await readEachOnce(api.url, spreadReads);
        if (spread > 1 && round === 1) console.log(`${''.padEnd(52)} first read of each of ${spread} databases: ${firstReads.toFixed(1)} s (${(spread / firstReads).toFixed(0)} per second)`);
        await load(api.url, token, concurrency, WARMUP_SECONDS, spreadReads);
        await sleep(STATS_SETTLE_MS);
        const openedBefore = await sessionsOpened(sessions);
        const watching = watchSessions(sessions);
        const label = `member reads over ${spread} databases, ${concurrency} concurrent${ROUNDS > 1 ? `, round ${round}` : ''}`;
        const result = await run(label, () => load(api.url, token, concurrency, SECONDS, spreadReads));
        const most = await watching.stop();
        await sleep(STATS_SETTLE_MS);
        const opened = (await sessionsOpened(sessions)) - openedBefore;
        const key = `${spread}/${concurrency}`;
        reads.set(key, [...(reads.get(key) ?? []), { result, sessions: most, opened }]);
        console.log(
          `${''.padEnd(52)} API sessions on the cluster at most ${most} (budget ${BUDGET}); ${opened} opened, ` +
            `${(opened / Math.max(1, result['2xx'] + result.non2xx)).toFixed(3)} per request`,
        );
      }
    }
  }

  // Pages of 1,000.
  const tenantPage = await request('GET', `${path(0)}/tenants?limit=1000`, { token });
  const userPage = await request('GET', `${path(0)}/tenants/${crowded}/users?limit=1000`, { token });
  if (tenantPage.body.length !== 1000 || userPage.body.length !== 1000) throw new Error(`pages of ${tenantPage.body.length} tenants, ${userPage.body.length} users`);
  console.log(`page sizes: tenants ${(tenantPage.text.length / 1024).toFixed(0)} kB, users ${(userPage.text.length / 1024).toFixed(0)} kB (uncompressed)`);
  const tenantsPage = await run('page of 1,000 tenants (1 client)', () => load(`${api.url}${path(0)}/tenants?limit=1000`, token, 1, SECONDS));
  const usersPage = await run('page of 1,000 users (1 client)', () => load(`${api.url}${path(0)}/tenants/${crowded}/users?limit=1000`, token, 1, SECONDS));

  // Another database while four clients page through big's 10,000 tenants.
  const unrelatedUrl = `${api.url}${members[0].path}`;
  // How busy the machine (2 cores: the API, PostgreSQL, the clients) was over each run.
  const busyDuring = async (target: () => Promise<Result>) => {
    const [result, busy] = await Promise.all([target(), machineBusy(SECONDS * 1000)]);
    console.log(`${''.padEnd(52)} machine busy ${(busy * 100).toFixed(0)}% of its CPU time meanwhile`);
    return result;
  };
  const alone = await busyDuring(() => run('unrelated database alone (member, 10 clients)', () => load(unrelatedUrl, members[0].token, 10, SECONDS)));
  const pagers = await runPagers(api.url, token, `${path(0)}/tenants`, SECONDS);
  await pagers.paging;
  const beside = await busyDuring(() => run('unrelated database beside 4 pagers (member, 10 clients)', () => load(unrelatedUrl, members[0].token, 10, SECONDS)));
  console.log(`${''.padEnd(52)} the pagers read ${await pagers.pages} pages of 1,000 tenants in ${SECONDS + 2} s about it`);

  // The user in 500 tenants against the naive handler, which answers the same rows.
  const keys = await query<{ public_jwk: object }>(controlPlane.url, 'select public_jwk from signing_keys');
  const naive = teardown.add(await startNaive(postgres.urlFor(bigName), keys[0].public_jwk));
  const fromApi = await request('GET', `${path(0)}/tenants`, { token: many });
  const fromNaive = await naive.request('GET', `${path(0)}/tenants`, { token: many });
  if (fromApi.body.length !== 500 || JSON.stringify(fromApi.body) !== JSON.stringify(fromNaive.body)) {
    throw new Error(`the API and the naive handler disagree: ${fromApi.body.length} and ${fromNaive.body.length} tenants`);
  }
  await load(`${api.url}${path(0)}/tenants`, many, 50, WARMUP_SECONDS);
  const member = await run('user in 500 tenants, API (50 clients)', () => load(`${api.url}${path(0)}/tenants`, many, 50, SECONDS));
  await load(`${naive.url}${path(0)}/tenants`, many, 50, WARMUP_SECONDS);
  const naiveMember = await run('user in 500 tenants, naive Koa + pg (50 clients)', () => load(`${naive.url}${path(0)}/tenants`, many, 50, SECONDS));
  await run('user in 3 tenants, API (50 clients)', () => load(`${api.url}${path(0)}/tenants`, few, 50, SECONDS));

  // Memory once every database has been read.
  await load(api.url, token, 20, Math.max(5, Math.ceil(DATABASES / 200)), Array.from({ length: DATABASES }, (_, i) => ({ path: `${path(i)}/tenants?limit=1`, token })));
  const rss = rssMb(api.child.pid!);
  console.log(`API RSS after reading all ${DATABASES} databases: ${rss.toFixed(0)} MB`);

  const ratio = (a: Result, b: Result) => a.requests.average / b.requests.average;
  const goals: { what: string; detail: string; met: boolean }[] = [];
  /** Per round, `spread` databases' req/s against one database's at `concurrency`. */
  const versusOne = (spread: string, concurrency: string) => {
    const ones = reads.get(`1/${concurrency}`)!;
    return reads.get(`${spread}/${concurrency}`)!.map((read, round) => ratio(read.result, ones[round].result));
  };
  for (const concurrency of CONCURRENCY) {
    if (reads.has(`100/${concurrency}`)) {
      const rounds = versusOne('100', String(concurrency));
      const r = median(rounds);
      const detail = ROUNDS > 1 ? `${r.toFixed(2)}x (median; rounds ${rounds.map((each) => `${each.toFixed(2)}x`).join(', ')})` : `${r.toFixed(2)}x`;
      goals.push({ what: `100 databases >= ${GOALS.spread100VersusOne}x one database, ${concurrency} concurrent`, detail, met: r >= GOALS.spread100VersusOne });
    }
  }
  const failed200 = [...reads.entries()]
    .filter(([key]) => key.endsWith('/200'))
    .flatMap(([, runs]) => runs)
    .reduce((sum, { result }) => sum + result.non2xx + result.errors + result.timeouts, 0);
  goals.push({ what: 'no error at 200 concurrent', detail: String(failed200), met: failed200 === 0 });
  const most = Math.max(...[...reads.values()].flat().map((read) => read.sessions));
  goals.push({ what: `PostgreSQL sessions of the API <= budget (${BUDGET})`, detail: String(most), met: most <= BUDGET });
  for (const [what, result] of [['tenants', tenantsPage], ['users', usersPage]] as const) {
    goals.push({ what: `page of 1,000 ${what}: p99 < ${GOALS.pageP99Ms} ms`, detail: `${result.latency.p99} ms`, met: result.latency.p99 < GOALS.pageP99Ms });
  }
  const factor = beside.latency.p99 / Math.max(1, alone.latency.p99);
  goals.push({ what: `unrelated database's p99 beside 4 pagers < ${GOALS.unrelatedP99Factor}x alone`, detail: `${alone.latency.p99} -> ${beside.latency.p99} ms (${factor.toFixed(2)}x)`, met: factor < GOALS.unrelatedP99Factor });
  const versusNaive = ratio(member, naiveMember);
  goals.push({ what: `user in 500 tenants >= ${GOALS.memberVersusNaive}x naive`, detail: `${versusNaive.toFixed(2)}x`, met: versusNaive >= GOALS.memberVersusNaive });
  goals.push({ what: `API RSS with ${DATABASES} databases read < ${GOALS.rssMb} MB`, detail: `${rss.toFixed(0)} MB`, met: rss < GOALS.rssMb });

  console.log(`\n## Scale benchmark: ${DATABASES} databases, ${SECONDS} s per run after ${WARMUP_SECONDS} s of warm-up, autocannon over loopback, 2 cores shared\n`);
  console.log(`Machine busy at rest with ${DATABASES} databases: ${(idleBusy * 100).toFixed(1)}% of its CPU time.\n`);
  console.log('| run | req/s | p50 ms | p99 ms | non-2xx | errors |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const { label, result } of measured) {
    console.log(`| ${label} | ${result.requests.average.toFixed(0)} | ${result.latency.p50} | ${result.latency.p99} | ${result.non2xx} | ${result.errors + result.timeouts} |`);
  }
  console.log(`\n| member reads${ROUNDS > 1 ? ` (medians of ${ROUNDS} rounds)` : ''}: databases | concurrent | req/s | vs 1 database | p99 ms | API sessions at most | sessions opened per request |`);
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [key, runs] of reads) {
    const [spread, concurrency] = key.split('/');
    const opened = median(runs.map((read) => read.opened / Math.max(1, read.result['2xx'] + read.result.non2xx)));
    console.log(
      `| ${spread} | ${concurrency} | ${median(runs.map((read) => read.result.requests.average)).toFixed(0)} | ${median(versusOne(spread, concurrency)).toFixed(2)}x | ` +
        `${median(runs.map((read) => read.result.latency.p99))} | ${Math.max(...runs.map((read) => read.sessions))} | ${opened.toFixed(3)} |`,
    );
  }
  console.log('\n| goal | measured | met |');
  console.log('| --- | ---: | --- |');
  for (const goal of goals) console.log(`| ${goal.what} | ${goal.detail} | ${goal.met ? 'yes' : 'NO'} |`);
  exitCode = goals.every((goal) => goal.met) ? 0 : 1;
} catch (error) {
  console.error(error);
} finally {
  cancelLimit();
  await teardown.run();
}
process.exit(exitCode);

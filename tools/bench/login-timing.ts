// `npm run bench:login-timing`: does a failed sign-in tell, by its timing, whether the email
// exists? Times interleaved sequential POST T/users/login with (a) an unknown email, (b) a known
// email and a wrong password, (c) a real user of the database, right password, who is not a member
// of the tenant, against the API (a separate process) at the default password cost with the
// throttle's limits raised. Then, with the default policy (a new API process), shows the throttle
// answering 429 with Retry-After. Runs on its own embedded PostgreSQL (or DATABASE_URL's server),
// over loopback only, within a time limit; stops by itself.
import { query } from '@platform/testing';
import {
  createTenant,
  createUser,
  expectStatus,
  median,
  percentile,
  provisionDatabase,
  startApiProcess,
  startControlPlane,
  Teardown,
  timeLimit,
  type Request,
} from './support.js';

const ROUNDS = 40;
const WARMUP_ROUNDS = 3;
/** Concurrent wrong guesses for one email, against the default limit of 5. */
const BURST = 20;

type Case = 'a' | 'b' | 'c';
const LABELS: Record<Case, string> = {
  a: '(a) unknown email',
  b: '(b) known email, wrong password',
  c: '(c) real user, not a member of the tenant',
};

function stats(samples: number[]): { median: number; p10: number; p90: number } {
  const sorted = [...samples].sort((x, y) => x - y);
  return { median: median(samples), p10: percentile(sorted, 10), p90: percentile(sorted, 90) };
}

async function timed(request: Request, path: string, credentials: { email: string; password: string }) {
  const started = performance.now();
  const response = await request('POST', path, { json: credentials });
  return { ms: performance.now() - started, response };
}

const teardown = new Teardown();
const cancelLimit = timeLimit(300, teardown.run);
try {
  const { controlPlane } = await startControlPlane(teardown);
  const defaults = { LOG_LEVEL: 'error', PASSWORD_HASH_LOGN: undefined };
  const raised = { LOGIN_DELAY_AFTER_FAILURES: '1000000', LOGIN_DELAY_AFTER_ACCOUNT_FAILURES: '1000000', LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '1000000' };
  let api = teardown.add(await startApiProcess(controlPlane, { ...defaults, ...raised }));
  let request = api.request;
  const { developerToken, databasePath } = await provisionDatabase(controlPlane, request, { workspace: 'bench', database: 'login' });
  const tenant = await createTenant(request, developerToken, databasePath, 'signed-into');
  const otherTenant = await createTenant(request, developerToken, databasePath, 'elsewhere');
  const member = { email: 'member@example.test', password: 'member-password' };
  const outsider = { email: 'outsider@example.test', password: 'outsider-password' };
  await createUser(request, developerToken, `${databasePath}/tenants/${tenant}`, member);
  await createUser(request, developerToken, `${databasePath}/tenants/${otherTenant}`, outsider);
  const loginPath = `${databasePath}/tenants/${tenant}/users/login`;

  let unknown = 0;
  const attempt = (kind: Case) =>
    timed(request, loginPath, {
      a: { email: `nobody-${unknown++}@example.test`, password: 'some-password' },
      b: { email: member.email, password: 'wrong-password' },
      c: outsider,
    }[kind]);
  const bodies = new Map<Case, Set<string>>([
    ['a', new Set()],
    ['b', new Set()],
    ['c', new Set()],
  ]);
  const check = (kind: Case, response: { status: number; text: string }) => {
    expectStatus(response, 401, LABELS[kind]);
    bodies.get(kind)!.add(response.text);
  };

  // The first unknown email of a process also builds the dummy hash it verifies against.
  const first = await attempt('a');
  check('a', first.response);
  for (let i = 0; i < WARMUP_ROUNDS; i++) for (const kind of ['a', 'b', 'c'] as const) check(kind, (await attempt(kind)).response);

  const samples: Record<Case, number[]> = { a: [], b: [], c: [] };
  const orders: Case[][] = [
    ['a', 'b', 'c'],
    ['b', 'c', 'a'],
    ['c', 'a', 'b'],
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of orders[round % orders.length]) {
      const { ms, response } = await attempt(kind);
      check(kind, response);
      samples[kind].push(ms);
    }
  }

  console.log(`\nPOST T/users/login, default password cost (PASSWORD_HASH_LOGN unset: 15), throttle limits raised`);
  console.log(`${ROUNDS} interleaved sequential rounds after ${WARMUP_ROUNDS} warm-up rounds; every answer 401`);
  const medians = {} as Record<Case, number>;
  for (const kind of ['a', 'b', 'c'] as const) {
    const { median: m, p10, p90 } = stats(samples[kind]);
    medians[kind] = m;
    console.log(`  ${LABELS[kind].padEnd(44)} median ${m.toFixed(1).padStart(6)} ms   p10 ${p10.toFixed(1).padStart(6)} ms   p90 ${p90.toFixed(1).padStart(6)} ms`);
  }
  console.log(`  difference of medians: b - a ${(medians.b - medians.a).toFixed(1)} ms, c - a ${(medians.c - medians.a).toFixed(1)} ms, c - b ${(medians.c - medians.b).toFixed(1)} ms`);
  console.log(`  first unknown-email sign-in of the process: ${first.ms.toFixed(1)} ms (builds the dummy hash)`);
  const allBodies = new Set([...bodies.values()].flatMap((set) => [...set]));
  console.log(`  response bodies: ${allBodies.size === 1 ? 'identical for all three' : `${allBodies.size} different`}: ${[...allBodies].join(' | ')}`);

  // The default policy (5 failures per account and address, 20 per account, 100 per address), in a
  // new process. The counters are the control plane's: those of the timing runs go first.
  await api.stop();
  await query(controlPlane.url, 'delete from sign_in_failures');
  api = teardown.add(await startApiProcess(controlPlane, defaults));
  request = api.request;
  console.log(`\nthrottle with the default policy (new API process): wrong passwords for one account from one address`);
  for (let i = 1; i <= 6; i++) {
    const { response } = await timed(request, loginPath, { email: member.email, password: `wrong-password-${i}` });
    console.log(`  attempt ${i}: ${response.status}${response.headers.get('retry-after') ? ` Retry-After: ${response.headers.get('retry-after')}` : ''}`);
    if (i <= 5) expectStatus(response, 401, `attempt ${i}`);
    else {
      expectStatus(response, 429, `attempt ${i}`);
      const retryAfter = Number(response.headers.get('retry-after'));
      if (!(retryAfter > 0 && retryAfter <= 900)) throw new Error(`Retry-After ${response.headers.get('retry-after')}`);
    }
  }
  const right = await timed(request, loginPath, member);
  console.log(`  then the right password from that address: ${right.response.status} Retry-After: ${right.response.headers.get('retry-after')}`);
  expectStatus(right.response, 429, 'right password while throttled');
  const otherEmail = await timed(request, loginPath, { email: 'someone-else@example.test', password: 'wrong-password' });
  console.log(`  another email from the same client: ${otherEmail.response.status}`);
  expectStatus(otherEmail.response, 401, 'another email');

  // Guesses for one account from one address take turns, so of those that arrive together only
  // the limit's worth reach the (slow) password check.
  const burst = await Promise.all(
    Array.from({ length: BURST }, (_, i) => request('POST', `${databasePath}/users/login`, { json: { email: outsider.email, password: `guessed-password-${i}` } })),
  );
  const byStatus = new Map<number, number>();
  for (const response of burst) byStatus.set(response.status, (byStatus.get(response.status) ?? 0) + 1);
  const after = await request('POST', `${databasePath}/users/login`, { json: { email: outsider.email, password: 'guess-after' } });
  console.log(
    `  ${BURST} concurrent wrong passwords for a fresh email (limit 5): ` +
      `${[...byStatus].sort(([x], [y]) => x - y).map(([status, count]) => `${count} x ${status}`).join(', ')}; the next one: ${after.status}`,
  );
} finally {
  cancelLimit();
  await teardown.run();
}

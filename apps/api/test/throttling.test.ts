// Sign-in throttling over HTTP, as a table of cases (issue 11, findings 1 and 2). Each case signs
// in as fresh users from addresses of its own: any 127.x.y.z is this machine's loopback, so each
// address is a real, distinct client to the API.
import { expect } from 'chai';
import { httpClient, type TestResponse } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { createTenant, createUser, developerWithReadyDatabase, uniqueEmail, type TestUser } from './support/fixtures.js';

/** The policy of the APIs under test: small limits, waits of 2 s doubling up to 4 s. */
const POLICY = {
  LOGIN_DELAY_AFTER_FAILURES: '3',
  LOGIN_DELAY_AFTER_ACCOUNT_FAILURES: '6',
  LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '8',
  LOGIN_DELAY_FIRST: '2',
  LOGIN_DELAY_MAX: '4',
  LOGIN_FAILURE_MEMORY: '600',
};

/** Who signs in, and where: a user of the case's world with their right or a wrong password. */
interface Attempt {
  path: string;
  email: string;
  password: string;
}

interface World {
  D: string;
  T: string;
  ada: TestUser;
  bob: TestUser;
  /** An email no user of the database has. */
  ghost: string;
  /** Ada's email in another workspace's database, where it is another person's account. */
  twin: () => Promise<{ D: string; user: TestUser }>;
  /** A user of the database who is not a member of T. */
  outsider: () => Promise<TestUser>;
}

type Who = (world: World) => Attempt | Promise<Attempt>;
type Status = 200 | 401 | 429;

/** One step of a case: a sign-in from an address of the case (a number: 127.0.<case>.<n>), or a pause. */
type Step =
  | { from: number; who: Who; expect: Status; via?: 'second API'; headers?: Record<string, string>; retryAfterAtMost?: number }
  | { from: number; each: number; who: (world: World, i: number) => Attempt | Promise<Attempt>; concurrently: true; expect: Partial<Record<Status, number>> }
  | { sleep: number };

const right = (user: keyof Pick<World, 'ada' | 'bob'>, at: 'D' | 'T' = 'D'): Who => (w) => ({ path: w[at], email: w[user].email, password: w[user].password });
const wrong = (user: keyof Pick<World, 'ada' | 'bob'>, at: 'D' | 'T' = 'D'): Who => (w) => ({ path: w[at], email: w[user].email, password: 'not the password' });
const times = (count: number, step: Step): Step[] => Array.from({ length: count }, () => step);

const cases: { what: string; steps: Step[] }[] = [
  {
    what: 'after 3 wrong passwords from one address that address waits, even with the right one; from another address the right one signs in (finding 2)',
    steps: [...times(3, { from: 1, who: wrong('ada'), expect: 401 }), { from: 1, who: right('ada'), expect: 429, retryAfterAtMost: 2 }, { from: 2, who: right('ada'), expect: 200 }],
  },
  {
    what: 'a flood of wrong guesses from one address does not lock the user out from another',
    // The 20 go at once: one after another, on a loaded machine they could outlast the 2 s wait.
    steps: [
      ...times(3, { from: 1, who: wrong('ada'), expect: 401 }),
      { from: 1, each: 20, who: wrong('ada'), concurrently: true, expect: { 429: 20 } },
      { from: 2, who: right('ada'), expect: 200 },
    ],
  },
  {
    what: 'a right password forgets the failures of its own address',
    steps: [...times(2, { from: 1, who: wrong('ada'), expect: 401 }), { from: 1, who: right('ada'), expect: 200 }, ...times(2, { from: 1, who: wrong('ada'), expect: 401 }), { from: 1, who: right('ada'), expect: 200 }],
  },
  {
    what: 'the wait doubles with each failure past the limit, and each wait ends',
    steps: [
      ...times(3, { from: 1, who: wrong('ada'), expect: 401 }),
      { from: 1, who: right('ada'), expect: 429, retryAfterAtMost: 2 },
      { sleep: 2_100 },
      { from: 1, who: wrong('ada'), expect: 401 },
      { from: 1, who: right('ada'), expect: 429, retryAfterAtMost: 4 },
      { sleep: 4_100 },
      { from: 1, who: right('ada'), expect: 200 },
    ],
  },
  {
    what: 'a guess spread over many addresses: past 6 failures of the account each failing address waits after one failure; a clean address signs in',
    steps: [
      ...[1, 2, 3, 4, 5, 6].map((from): Step => ({ from, who: wrong('ada'), expect: 401 })),
      { from: 7, who: wrong('ada'), expect: 401 },
      { from: 7, who: right('ada'), expect: 429 },
      { from: 6, who: right('ada'), expect: 429 },
      { from: 8, who: right('ada'), expect: 200 },
    ],
  },
  {
    what: 'an address failing for 8 accounts waits for every account, even with the right password; other addresses do not',
    steps: [
      { from: 1, each: 8, who: (w: World) => ({ path: w.D, email: uniqueEmail('sprayed'), password: 'not the password' }), concurrently: true, expect: { 401: 8 } },
      { from: 1, who: right('bob'), expect: 429 },
      { from: 2, who: right('bob'), expect: 200 },
    ],
  },
  {
    // One account holds 4 places in the hashing queue at once from one address (issue 46: 64 at once are a flood, sign-in-flood.test.ts).
    what: 'correct sign-ins never count: 4 at once for one account from one address, then 64 users at once from it, all signed in (finding 1)',
    steps: [
      { from: 1, each: 4, who: right('ada'), concurrently: true, expect: { 200: 4 } },
      {
        from: 1,
        each: 64,
        who: async (w: World) => {
          const user = await createUser(platformUnderTest, ownerToken, w.T);
          return { path: w.D, email: user.email, password: user.password };
        },
        concurrently: true,
        expect: { 200: 64 },
      },
      ...times(2, { from: 1, who: wrong('ada'), expect: 401 }),
      { from: 1, who: right('ada'), expect: 200 },
    ],
  },
  {
    what: 'concurrent guesses for one account from one address take turns: 3 are checked, 9 wait',
    steps: [{ from: 1, each: 12, who: wrong('ada'), concurrently: true, expect: { 401: 3, 429: 9 } }],
  },
  {
    what: 'an email no one has is throttled exactly as an account is',
    steps: [...times(3, { from: 1, who: (w) => ({ path: w.D, email: w.ghost, password: 'a password' }), expect: 401 }), { from: 1, who: (w) => ({ path: w.D, email: w.ghost, password: 'a password' }), expect: 429 }],
  },
  {
    what: 'spellings of an email that PostgreSQL folds alike are one account (a capital dotted I)',
    steps: [
      ...times(3, { from: 1, who: wrong('ada'), expect: 401 }),
      // JavaScript lower-cases İ to "i̇", PostgreSQL's lower() finds the same account for it.
      { from: 1, who: (w) => ({ path: w.D, email: w.ada.email.replace('alice', 'alİce'), password: w.ada.password }), expect: 429 },
    ],
  },
  {
    what: 'failures for one database do not count for the same email in another',
    steps: [
      ...times(3, { from: 1, who: wrong('ada'), expect: 401 }),
      { from: 1, who: right('ada'), expect: 429 },
      { from: 1, who: async (w) => ({ path: (await w.twin()).D, email: w.ada.email, password: (await w.twin()).user.password }), expect: 200 },
    ],
  },
  {
    what: 'the right password of a user outside the tenant is a failure, counted as any other',
    steps: [
      ...times(3, { from: 1, who: async (w) => ({ path: w.T, email: (await w.outsider()).email, password: (await w.outsider()).password }), expect: 401 }),
      { from: 1, who: async (w) => ({ path: w.D, email: (await w.outsider()).email, password: (await w.outsider()).password }), expect: 429 },
    ],
  },
  {
    what: 'forwarded-for headers are not trusted: the socket’s address is the client',
    steps: [
      ...[1, 2, 3].map((n): Step => ({ from: 1, who: wrong('ada'), expect: 401, headers: { 'x-forwarded-for': `203.0.113.${n}`, 'x-real-ip': `203.0.113.${n}` } })),
      { from: 1, who: right('ada'), expect: 429, headers: { 'x-forwarded-for': '198.51.100.1' } },
    ],
  },
  {
    what: 'behind a trusted proxy, each client it forwards is an address of its own; what the client itself claims to the left is not read',
    steps: [
      ...times(3, { from: 1, who: wrong('ada'), expect: 401, via: 'second API', headers: { 'x-forwarded-for': '198.51.100.1' } }),
      { from: 1, who: right('ada'), expect: 429, via: 'second API', headers: { 'x-forwarded-for': '198.51.100.1' } },
      { from: 1, who: right('ada'), expect: 429, via: 'second API', headers: { 'x-forwarded-for': '198.51.100.2, 198.51.100.1' } },
      { from: 1, who: right('ada'), expect: 200, via: 'second API', headers: { 'x-forwarded-for': '198.51.100.2' } },
      // The proxy itself, forwarding nothing, has no failures for ada.
      { from: 1, who: right('ada'), expect: 200, via: 'second API' },
    ],
  },
  {
    what: 'replicas share the counters through the control plane: failures on one API make another wait',
    steps: [...times(3, { from: 1, who: wrong('ada'), expect: 401 }), { from: 1, who: right('ada'), expect: 429, via: 'second API' }, { from: 2, who: right('ada'), expect: 200, via: 'second API' }],
  },
];

let platformUnderTest: TestPlatform;
let ownerToken: string;

describe('sign-in throttling (a table of cases)', function () {
  this.timeout(60_000);
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let elsewhere: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let elsewhereT: string;
  const apis: RunningApi[] = [];

  before(async function () {
    platformUnderTest = await platform();
    owner = await developerWithReadyDatabase(platformUnderTest);
    ownerToken = owner.token;
    elsewhere = await developerWithReadyDatabase(platformUnderTest);
    elsewhereT = `${elsewhere.D}/tenants/${(await createTenant(platformUnderTest, elsewhere.token, elsewhere.D)).id}`;
    // Two replicas of the API with the policy above, on the suite's control plane; the second
    // believes the X-Forwarded-For of proxies on loopback (a request without one is its own client).
    apis.push(await startApi(loadApiConfig({ ...platformUnderTest.env, ...POLICY })));
    apis.push(await startApi(loadApiConfig({ ...platformUnderTest.env, ...POLICY, TRUSTED_PROXIES: '127.0.0.0/8' })));
  });

  after(async function () {
    this.timeout(90_000);
    await Promise.all(apis.map((api) => api.close()));
  });

  async function newWorld(): Promise<World> {
    const p = platformUnderTest;
    const T = `${owner.D}/tenants/${(await createTenant(p, owner.token, owner.D)).id}`;
    const ada = await createUser(p, owner.token, T, { email: uniqueEmail('alice') });
    const bob = await createUser(p, owner.token, T);
    let twin: Promise<{ D: string; user: TestUser }> | undefined;
    let outsider: Promise<TestUser> | undefined;
    return {
      D: owner.D,
      T,
      ada,
      bob,
      ghost: uniqueEmail('ghost'),
      twin: () => (twin ??= createUser(p, elsewhere.token, elsewhereT, { email: ada.email }).then((user) => ({ D: elsewhere.D, user }))),
      outsider: () => (outsider ??= createTenant(p, owner.token, owner.D).then((other) => createUser(p, owner.token, `${owner.D}/tenants/${other.id}`))),
    };
  }

  function signIn(caseNumber: number, from: number, attempt: Attempt, options: { via?: 'second API'; headers?: Record<string, string> } = {}): Promise<TestResponse> {
    const api = options.via ? apis[1] : apis[0];
    const request = httpClient(api.url, { from: `127.0.${20 + caseNumber}.${from}` });
    return request('POST', `${attempt.path}/users/login`, { json: { email: attempt.email, password: attempt.password }, headers: options.headers });
  }

  function expectStatus(response: TestResponse, status: Status, retryAfterAtMost = 4): void {
    if (status === 401) return expectApiError(response, 401, 'authentication_failed');
    if (status === 200) {
      expect(response.status, response.text).to.equal(200);
      return;
    }
    expectApiError(response, 429, 'too_many_attempts');
    const retryAfter = Number(response.headers.get('retry-after'));
    expect(retryAfter, 'Retry-After').to.be.within(1, retryAfterAtMost);
    expect(response.headers.getSetCookie()).to.deep.equal([]);
  }

  cases.forEach(({ what, steps }, caseNumber) => {
    it(what, async function () {
      const world = await newWorld();
      for (const [index, step] of steps.entries()) {
        const label = `step ${index + 1}`;
        if ('sleep' in step) {
          // Waits out a throttle's wait: a pause, not a timing assertion.
          await new Promise((resolve) => setTimeout(resolve, step.sleep));
        } else if ('concurrently' in step) {
          const attempts = await Promise.all(Array.from({ length: step.each }, (_, i) => step.who(world, i)));
          const answers = await Promise.all(attempts.map((attempt) => signIn(caseNumber, step.from, attempt)));
          const counted: Partial<Record<number, number>> = {};
          for (const answer of answers) counted[answer.status] = (counted[answer.status] ?? 0) + 1;
          expect(counted, `${label}: ${answers.find((answer) => !(answer.status in step.expect))?.text ?? ''}`).to.deep.equal(step.expect);
        } else {
          const response = await signIn(caseNumber, step.from, await step.who(world), step);
          expect(response.status, `${label}: ${response.text}`).to.equal(step.expect);
          expectStatus(response, step.expect, step.retryAfterAtMost);
        }
      }
    });
  });
});

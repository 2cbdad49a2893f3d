// Sign-in under a flood (issue 46): one address sends correct sign-ins for one user of a tenant, 64
// at a time; right after, 64 other users of the tenant sign in once each. The flood is throttled
// (429 too_many_attempts with Retry-After, never a 503) and every other user signs in. Each address
// is a real, distinct client: any 127.x.y.z is this machine's loopback. The hashes cost an eighth
// of the default (logN 12, not 15): the test machine runs other suites beside this one, and what is
// tested is who gets the hashing capacity, not how much there is (bench:sign-in-flood measures that).
import { expect } from 'chai';
import { httpClient, type TestResponse } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { createTenant, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';

/** Concurrent sign-ins of the flood, and of the users who come after it. */
const CLIENTS = 64;
/** Answers the flood must have had before it stops: enough rounds that its backlog, if any, builds up. */
const FLOOD_ANSWERS = 4 * CLIENTS;

describe('sign-in under a flood (issue 46)', function () {
  // 65 users hashed, a flood, and 64 sign-ins, on a 2-core machine shared with other tests.
  this.timeout(180_000);
  let p: TestPlatform;
  let api: RunningApi;

  before(async function () {
    p = await platform();
    // A real cost (logN 12, about 20 ms a hash here): the suite's own API hashes at 10 (5 ms).
    api = await startApi(loadApiConfig({ ...p.env, PASSWORD_HASH_LOGN: '12', LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '100' }));
  });

  after(async function () {
    this.timeout(60_000);
    await api?.close();
  });

  it('a flood of correct sign-ins for one user from one address is throttled with 429s while that user signs in from elsewhere, 64 other users of the tenant then all sign in, and the flooded user is not locked out', async function () {
    const owner = await developerWithReadyDatabase(p);
    const T = `${owner.D}/tenants/${(await createTenant(p, owner.token, owner.D)).id}`;
    // Users hashed by the API under test, at its cost: a hash keeps the cost it was made with.
    const asOwner = httpClient(api.url, { from: '127.0.46.200' });
    const users: { email: string; password: string }[] = [];
    for (let batch = 0; users.length < CLIENTS + 1; batch++) {
      const made = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const user = { email: uniqueEmail('flood'), password: `password of ${uniqueEmail()}` };
          const created = await asOwner('POST', `${T}/users`, { token: owner.token, json: user });
          expect(created.status, created.text).to.equal(201);
          return user;
        }),
      );
      users.push(...made);
    }
    const [target, ...others] = users.slice(0, CLIENTS + 1);

    // The flood: 64 clients from one address, each sending its next sign-in as soon as the last is answered.
    const attacker = httpClient(api.url, { from: '127.0.46.1' });
    const floodAnswers: TestResponse[] = [];
    let flooding = true;
    let anyRefused = false;
    let firstRefusal: () => void = () => {};
    const refusing = new Promise<void>((resolve) => (firstRefusal = resolve));
    // The flooded user's own sign-in, once answered.
    const ownSignIn: { answer?: TestResponse } = {};
    const flood = Array.from({ length: CLIENTS }, async () => {
      while (flooding) {
        const answer = await attacker('POST', `${T}/users/login`, { json: target });
        floodAnswers.push(answer);
        if (answer.status === 429) {
          anyRefused = true;
          firstRefusal();
        }
        // Once refusals began, the flood lasts until the flooded user's own sign-in (below) is answered.
        if (floodAnswers.length >= FLOOD_ANSWERS && (!anyRefused || ownSignIn.answer)) flooding = false;
      }
    });
    // While the flood is refused, the flooded user signs in from an address of their own.
    await Promise.race([refusing, Promise.all(flood)]);
    const meanwhile = (ownSignIn.answer = await httpClient(api.url, { from: '127.0.46.3' })('POST', `${T}/users/login`, { json: target }));
    // Right after (the flood's last requests still under way), 64 other users sign in once each.
    const signIns = others.map(async (user, i) => {
      await Promise.race(flood);
      return httpClient(api.url, { from: `127.0.47.${i + 1}` })('POST', `${T}/users/login`, { json: user });
    });
    const answers = await Promise.all(signIns);
    await Promise.all(flood);

    expect(meanwhile.status, meanwhile.text).to.equal(200);
    const statuses = (list: TestResponse[]) => list.reduce<Record<number, number>>((counted, { status }) => ({ ...counted, [status]: (counted[status] ?? 0) + 1 }), {});
    expect(statuses(answers), answers.find((answer) => answer.status !== 200)?.text).to.deep.equal({ 200: CLIENTS });
    // The flood was throttled, and honestly: 200s and 429s only, never a 503.
    const floodStatuses = statuses(floodAnswers);
    expect(Object.keys(floodStatuses).sort(), JSON.stringify(floodStatuses)).to.deep.equal(['200', '429']);
    const refused = floodAnswers.find((answer) => answer.status === 429)!;
    expect(refused.body).to.deep.equal({
      errorCode: 'too_many_attempts',
      message: 'Too many password checks are under way for this account, address or database; try again shortly',
      statusCode: 429,
    });
    expect(Number(refused.headers.get('retry-after')), 'Retry-After').to.be.at.least(1);
    // Refusals count as no failure: the flooded user is not locked out, from the flood's address or another.
    for (const from of ['127.0.46.1', '127.0.46.2']) {
      const after = await httpClient(api.url, { from })('POST', `${T}/users/login`, { json: target });
      expect(after.status, `from ${from}: ${after.text}`).to.equal(200);
    }
  });
});

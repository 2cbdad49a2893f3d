import { expect } from 'chai';
import { query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createScratchControlPlane, type ScratchControlPlane } from '../scratch-control-plane.test.js';
import { SqlSignInFailureStore } from './sign-in-failure.store.js';

describe('SqlSignInFailureStore', function () {
  this.timeout(30_000);
  let server: TestPostgres;
  let controlPlane: ScratchControlPlane;
  let store: SqlSignInFailureStore;
  const t0 = new Date('2026-11-22T12:00:00Z');
  const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);
  /** Counters last failed before this are forgotten (a memory of 100 s at t0 + 100 s). */
  const since = at(0);

  before(async function () {
    server = await startTestPostgres();
    controlPlane = await createScratchControlPlane(server);
    store = new SqlSignInFailureStore(controlPlane.orm, Number.POSITIVE_INFINITY);
  });

  after(async function () {
    await controlPlane?.close();
    await server?.stop();
  });

  it('counts failures per key, reads only what is asked and remembered, and forgets a key', async function () {
    await store.record(['account:a', 'address:192.0.2.1'], at(10), since);
    await store.record(['account:a', 'address:192.0.2.2'], at(20), since);
    const counts = await store.read(['account:a', 'address:192.0.2.1', 'address:192.0.2.2', 'account:b'], since);
    expect(Object.fromEntries(counts)).to.deep.equal({
      'account:a': { failures: 2, lastFailure: at(20) },
      'address:192.0.2.1': { failures: 1, lastFailure: at(10) },
      'address:192.0.2.2': { failures: 1, lastFailure: at(20) },
    });
    await store.forget('account:a');
    expect(Object.fromEntries(await store.read(['account:a', 'address:192.0.2.1'], since))).to.deep.equal({ 'address:192.0.2.1': { failures: 1, lastFailure: at(10) } });
  });

  it('restarts a counter whose last failure is past the memory at one, and does not read it meanwhile', async function () {
    await store.record(['account:old'], at(-50), at(-200));
    await store.record(['account:old'], at(-40), at(-200));
    expect(await store.read(['account:old'], since)).to.deep.equal(new Map());
    await store.record(['account:old'], at(30), since);
    expect(await store.read(['account:old'], since)).to.deep.equal(new Map([['account:old', { failures: 1, lastFailure: at(30) }]]));
  });

  it('keeps neither keys nor addresses in the table, only their digests', async function () {
    await store.record(['account:email:acme/main:ada@example.com', 'address:203.0.113.7'], at(40), since);
    const rows = await query(controlPlane.url, `select encode(key_digest, 'escape') as key from sign_in_failures`);
    expect(rows.map((row) => String(row.key))).to.satisfy((keys: string[]) => keys.every((key) => !key.includes('ada@') && !key.includes('203.0.113')));
  });

  it('counts every one of many concurrent failures over overlapping keys, without deadlock', async function () {
    const keys = ['pair:x', 'account:x', 'address:x', 'address:y'];
    await Promise.all(Array.from({ length: 40 }, (_, i) => store.record(i % 2 ? keys : [...keys].reverse().slice(0, 3), at(50), since)));
    const counts = await store.read(keys, since);
    expect(keys.map((key) => counts.get(key)?.failures)).to.deep.equal([20, 40, 40, 40]);
  });

  it('deletes counters past their memory when it prunes', async function () {
    const pruning = new SqlSignInFailureStore(controlPlane.orm, 0);
    await pruning.record(['account:stale'], at(-500), at(-600));
    await pruning.record(['account:fresh'], at(60), since);
    const rows = await query(controlPlane.url, `select count(*)::int as n from sign_in_failures where last_failure <= $1`, [since]);
    expect(rows[0].n).to.equal(0);
  });
});

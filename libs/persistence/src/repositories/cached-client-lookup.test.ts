import { expect } from 'chai';
import type { OAuthClient } from '@platform/domain';
import { rejection } from '@platform/testing';
import { CachedClientLookup, type ClientForAuthentication, type CachedClientLookupOptions } from './cached-client-lookup.js';

function clientRecord(id: string, secretDigest = `digest-of-${id}`): ClientForAuthentication {
  const client: OAuthClient = { id, workspaceId: 'ws-1', name: id, type: 'confidential', redirectUris: [], created: new Date(0) };
  return { client, secretDigest };
}

/**
 * A loader over a table the test edits, counting its calls per id, and a clock the test moves.
 * With `hold`, loads wait until the test releases them.
 */
function setup(options: Omit<CachedClientLookupOptions, 'now'> = {}, hold = false) {
  const table = new Map<string, ClientForAuthentication>();
  const calls: string[] = [];
  const held: { release(): void; fail(error: Error): void }[] = [];
  let now = 1_000_000;
  const lookup = new CachedClientLookup(
    (id) => {
      calls.push(id);
      // What the table holds when the load starts, as a query would see it.
      const answer = table.get(id) ?? null;
      if (!hold) return Promise.resolve(answer);
      return new Promise((resolve, reject) => held.push({ release: () => resolve(answer), fail: reject }));
    },
    { ...options, now: () => now },
  );
  return {
    lookup,
    table,
    held,
    loadsOf: (id: string) => calls.filter((called) => called === id).length,
    advance: (ms: number) => void (now += ms),
  };
}

describe('CachedClientLookup', function () {
  it('answers a found client from memory without calling the loader again', async function () {
    const { lookup, table, loadsOf } = setup();
    table.set('cli_a', clientRecord('cli_a'));
    const first = await lookup.find('cli_a');
    const second = await lookup.find('cli_a');
    expect(first?.secretDigest).to.equal('digest-of-cli_a');
    expect(second).to.deep.equal(first);
    expect(loadsOf('cli_a')).to.equal(1);
  });

  it('serves a client for ttlMs, 5000 by default, then reads it again and sees the change', async function () {
    const { lookup, table, loadsOf, advance } = setup();
    table.set('cli_a', clientRecord('cli_a', 'old'));
    expect((await lookup.find('cli_a'))?.secretDigest).to.equal('old');
    table.set('cli_a', clientRecord('cli_a', 'rotated'));
    advance(4_999);
    expect((await lookup.find('cli_a'))?.secretDigest, 'within the staleness bound').to.equal('old');
    expect(loadsOf('cli_a')).to.equal(1);
    advance(1);
    expect((await lookup.find('cli_a'))?.secretDigest).to.equal('rotated');
    expect(loadsOf('cli_a')).to.equal(2);
    table.delete('cli_a');
    advance(5_000);
    expect(await lookup.find('cli_a'), 'deleted').to.equal(null);
  });

  it('honours a ttlMs of its own', async function () {
    const { lookup, table, loadsOf, advance } = setup({ ttlMs: 200 });
    table.set('cli_a', clientRecord('cli_a'));
    await lookup.find('cli_a');
    advance(199);
    await lookup.find('cli_a');
    expect(loadsOf('cli_a')).to.equal(1);
    advance(1);
    await lookup.find('cli_a');
    expect(loadsOf('cli_a')).to.equal(2);
  });

  it('remembers an unknown id for missTtlMs only, so a client registered after it is found soon', async function () {
    const { lookup, table, loadsOf, advance } = setup({ missTtlMs: 1_000 });
    expect(await lookup.find('cli_new')).to.equal(null);
    table.set('cli_new', clientRecord('cli_new'));
    advance(999);
    expect(await lookup.find('cli_new')).to.equal(null);
    expect(loadsOf('cli_new')).to.equal(1);
    advance(1);
    expect((await lookup.find('cli_new'))?.client.id).to.equal('cli_new');
    expect(loadsOf('cli_new')).to.equal(2);
  });

  it('reads an unknown id every time when missTtlMs is 0', async function () {
    const { lookup, loadsOf } = setup({ missTtlMs: 0 });
    await lookup.find('cli_nobody');
    await lookup.find('cli_nobody');
    expect(loadsOf('cli_nobody')).to.equal(2);
    expect(lookup.size).to.deep.equal({ found: 0, missing: 0 });
  });

  it('holds at most maxEntries clients, dropping the one closest to expiry', async function () {
    const { lookup, table, loadsOf, advance } = setup({ maxEntries: 3 });
    for (let i = 0; i < 5; i++) {
      table.set(`cli_${i}`, clientRecord(`cli_${i}`));
      await lookup.find(`cli_${i}`);
      advance(10);
    }
    expect(lookup.size.found).to.equal(3);
    for (const id of ['cli_2', 'cli_3', 'cli_4']) await lookup.find(id);
    for (const id of ['cli_2', 'cli_3', 'cli_4']) expect(loadsOf(id), id).to.equal(1);
    await lookup.find('cli_0');
    expect(loadsOf('cli_0'), 'evicted, so read again').to.equal(2);
    expect(lookup.size.found).to.equal(3);
  });

  it('keeps a flood of made-up ids to maxMisses, without pushing out real clients', async function () {
    const { lookup, table, loadsOf } = setup({ maxEntries: 2, maxMisses: 50 });
    table.set('cli_real', clientRecord('cli_real'));
    await lookup.find('cli_real');
    for (let i = 0; i < 5_000; i++) expect(await lookup.find(`cli_random_${i}`)).to.equal(null);
    expect(lookup.size).to.deep.equal({ found: 1, missing: 50 });
    expect((await lookup.find('cli_real'))?.client.id).to.equal('cli_real');
    expect(loadsOf('cli_real')).to.equal(1);
  });

  it('lets concurrent lookups of one uncached id share a single load', async function () {
    const { lookup, table, held, loadsOf } = setup({}, true);
    table.set('cli_a', clientRecord('cli_a'));
    const waiting = Array.from({ length: 20 }, () => lookup.find('cli_a'));
    const other = lookup.find('cli_b');
    expect(loadsOf('cli_a')).to.equal(1);
    expect(loadsOf('cli_b'), 'another id loads on its own').to.equal(1);
    for (const load of held) load.release();
    const answers = await Promise.all(waiting);
    expect(answers.every((answer) => answer?.client.id === 'cli_a')).to.equal(true);
    expect(await other).to.equal(null);
    await lookup.find('cli_a');
    expect(loadsOf('cli_a'), 'and the result is then cached').to.equal(1);
  });

  it('does not remember a failed load: every waiter sees the error and the next lookup reads again', async function () {
    const { lookup, table, held, loadsOf } = setup({}, true);
    table.set('cli_a', clientRecord('cli_a'));
    const first = lookup.find('cli_a');
    const second = lookup.find('cli_a');
    held[0].fail(new Error('connection lost'));
    expect(((await rejection(first)) as Error).message).to.equal('connection lost');
    expect(((await rejection(second)) as Error).message).to.equal('connection lost');
    const retried = lookup.find('cli_a');
    expect(loadsOf('cli_a')).to.equal(2);
    held[1].release();
    expect((await retried)?.client.id).to.equal('cli_a');
  });

  it('turns a loader that throws synchronously into a rejection', async function () {
    const lookup = new CachedClientLookup(() => {
      throw new Error('not connected');
    });
    expect(((await rejection(lookup.find('cli_a'))) as Error).message).to.equal('not connected');
  });

  it('forgets an id at once, and does not store a load that was under way when it was forgotten', async function () {
    const { lookup, table, held, loadsOf } = setup({}, true);
    table.set('cli_a', clientRecord('cli_a', 'old'));
    const before = lookup.find('cli_a');
    lookup.forget('cli_a');
    table.set('cli_a', clientRecord('cli_a', 'rotated'));
    const after = lookup.find('cli_a');
    expect(loadsOf('cli_a'), 'a new load, not the one under way').to.equal(2);
    held[1].release();
    expect((await after)?.secretDigest).to.equal('rotated');
    held[0].release();
    expect((await before)?.secretDigest, 'the caller before forget() gets what was read then').to.equal('old');
    expect((await lookup.find('cli_a'))?.secretDigest, 'the late answer did not overwrite the newer one').to.equal('rotated');
    expect(loadsOf('cli_a')).to.equal(2);
  });

  it('clears everything at once, loads under way included', async function () {
    const { lookup, table, held, loadsOf } = setup({}, true);
    table.set('cli_a', clientRecord('cli_a', 'old'));
    const known = lookup.find('cli_a');
    const unknown = lookup.find('cli_nobody');
    held[0].release();
    held[1].release();
    await Promise.all([known, unknown]);
    const underWay = lookup.find('cli_b');
    expect(lookup.size).to.deep.equal({ found: 1, missing: 1 });
    lookup.clear();
    expect(lookup.size).to.deep.equal({ found: 0, missing: 0 });
    held[2].release();
    await underWay;
    expect(lookup.size, 'the load under way was not stored').to.deep.equal({ found: 0, missing: 0 });
    table.set('cli_a', clientRecord('cli_a', 'rotated'));
    const again = lookup.find('cli_a');
    held[3].release();
    expect((await again)?.secretDigest).to.equal('rotated');
    expect(loadsOf('cli_a')).to.equal(2);
  });

  it('refuses nonsensical bounds', function () {
    const load = async () => null;
    expect(() => new CachedClientLookup(load, { ttlMs: -1 })).to.throw(RangeError);
    expect(() => new CachedClientLookup(load, { maxEntries: 0 })).to.throw(RangeError);
    expect(() => new CachedClientLookup(load, { maxMisses: 1.5 })).to.throw(RangeError);
  });
});

import { expect } from 'chai';
import { QueryCounters, QueryTracker, recordQuery } from './query-counters.js';

const c = (text: string) => text.charCodeAt(0);

function tracked() {
  const counters = new QueryCounters();
  const cell = counters.cell('db', 'tenant');
  const tracker = new QueryTracker(cell);
  const client = (types: string) => [...types].forEach((type) => tracker.fromClient(c(type)));
  const server = (types: string) => [...types].forEach((type) => tracker.fromServer(c(type), type === 'Z' ? c('I') : -1));
  return { counters, cell, tracker, client, server };
}

describe('QueryTracker', () => {
  it('counts a simple query once however many statements it held', () => {
    const t = tracked();
    t.client('Q');
    t.server('TDCCCZ');
    expect(t.cell).to.include({ queries: 1, errors: 0 });
    expect(t.cell.totalMs).to.be.at.least(0);
    expect(t.tracker.pending).to.equal(0);
  });

  it('counts a failed simple query as an error', () => {
    const t = tracked();
    t.client('QQ');
    t.server('EZ');
    t.server('CZ');
    expect(t.cell).to.include({ queries: 2, errors: 1 });
  });

  it('counts a failed simple query at its ErrorResponse, once, so a client that hangs up then leaves nothing uncounted', () => {
    const t = tracked();
    t.client('QQ');
    t.server('E');
    expect(t.cell).to.include({ queries: 1, errors: 1 });
    t.server('Z');
    expect(t.cell).to.include({ queries: 1, errors: 1 });
    expect(t.tracker.pending).to.equal(1);
    t.server('CZ');
    expect(t.cell).to.include({ queries: 2, errors: 1 });
    expect(t.tracker.pending).to.equal(0);
  });

  it('counts each Execute of a pipeline, and not those skipped after an error', () => {
    const t = tracked();
    // Parse, Bind, Execute three times, then Sync; the second Execute fails.
    t.client('PBEPBEPBES');
    t.server('12C'); // ParseComplete, BindComplete, CommandComplete
    t.server('12E'); // the second fails; the backend skips to Sync
    t.server('Z');
    expect(t.cell).to.include({ queries: 2, errors: 1 });
    expect(t.tracker.pending).to.equal(0);
  });

  it('counts a COPY as one query', () => {
    const t = tracked();
    t.client('Q');
    t.server('G');
    t.client('dddc');
    t.server('CZ');
    expect(t.cell).to.include({ queries: 1, errors: 0 });
  });

  it('keeps one cell per database and tenant', () => {
    const counters = new QueryCounters();
    expect(counters.cell('a', null)).to.equal(counters.cell('a', null));
    expect(counters.cell('a', null)).not.to.equal(counters.cell('a', 't'));
    counters.cell('a', 't').queries = 3;
    expect(counters.snapshot().map(({ databaseId, tenantId, queries }) => ({ databaseId, tenantId, queries }))).to.deep.equal([
      { databaseId: 'a', tenantId: null, queries: 0 },
      { databaseId: 'a', tenantId: 't', queries: 3 },
    ]);
  });
});

describe('QueryCounters per minute', () => {
  const at = (iso: string) => new Date(iso).getTime();

  it('adds each query to the minute it ended in, with its latency, and hands the minutes out until forgotten', () => {
    const counters = new QueryCounters();
    const cell = counters.cell('db', null);
    recordQuery(cell, 2, false, at('2026-11-22T12:00:59.999Z'));
    recordQuery(cell, 300, true, at('2026-11-22T12:01:00.000Z'));
    recordQuery(cell, 4, false, at('2026-11-22T12:01:30.000Z'));
    const rows = counters.minutes();
    expect(rows.map(({ minute, queries, errors, totalMs, latency }) => [minute.toISOString(), queries, errors, totalMs, latency.counts.reduce((a, b) => a + b, 0)])).to.deep.equal([
      ['2026-11-22T12:00:00.000Z', 1, 0, 2, 1],
      ['2026-11-22T12:01:00.000Z', 2, 1, 304, 2],
    ]);
    expect(rows[1].latency.buckets).to.have.length(2);
    counters.forgetBefore(new Date('2026-11-22T12:01:00Z'));
    expect(counters.minutes().map((row) => row.minute.toISOString())).to.deep.equal(['2026-11-22T12:01:00.000Z']);
    // The counters since start are kept whole.
    expect(cell).to.include({ queries: 3, errors: 1 });
  });

  it('keeps tenants apart', () => {
    const counters = new QueryCounters();
    recordQuery(counters.cell('db', 't1'), 1, false, at('2026-11-22T12:00:00Z'));
    recordQuery(counters.cell('db', 't2'), 1, false, at('2026-11-22T12:00:00Z'));
    recordQuery(counters.cell('db', 't1'), 1, false, at('2026-11-22T12:00:10Z'));
    expect(counters.minutes().map(({ tenantId, queries }) => [tenantId, queries])).to.deep.equal([
      ['t1', 2],
      ['t2', 1],
    ]);
  });
});

import { expect } from 'chai';
import { healthAfter } from './compute-health.js';
import type { ComputeHealth } from './compute-instances.js';

const SINCE = new Date('2026-01-01T00:00:00Z');
const ok = (reason: string | null = null): ComputeHealth => ({ status: 'ok', reason, since: SINCE });
const down = (reason: string): ComputeHealth => ({ status: 'down', reason, since: SINCE });
const DISK_FULL = 'PANIC: could not write to file "pg_wal/xlogtemp.9": No space left on device';

describe('healthAfter: what supervision records of a server', () => {
  it('writes nothing while the recorded health still says what was found', () => {
    expect(healthAfter(ok(), { kind: 'running' })).to.equal(null);
    expect(healthAfter(ok('started again after it stopped'), { kind: 'running' }), 'a restart stays said').to.equal(null);
    expect(healthAfter(down(DISK_FULL), { kind: 'cannot-start', cause: DISK_FULL })).to.equal(null);
  });

  it('a server that cannot start is down, in its own words; another cause replaces the first', () => {
    expect(healthAfter(ok(), { kind: 'cannot-start', cause: DISK_FULL })).to.deep.equal({ status: 'down', reason: DISK_FULL });
    expect(healthAfter(down(DISK_FULL), { kind: 'cannot-start', cause: 'FATAL: x' })).to.deep.equal({ status: 'down', reason: 'FATAL: x' });
    expect(healthAfter(null, { kind: 'cannot-start', cause: 'x'.repeat(2000) })!.reason).to.have.length(1000);
  });

  it('a server that came back is ok, and says what had stopped it', () => {
    expect(healthAfter(down(DISK_FULL), { kind: 'restarted', exitCause: DISK_FULL })).to.deep.equal({ status: 'ok', reason: `started again after it stopped: ${DISK_FULL}` });
    expect(healthAfter(ok(), { kind: 'restarted', exitCause: null })).to.deep.equal({ status: 'ok', reason: 'started again after it stopped' });
    expect(healthAfter(down(DISK_FULL), { kind: 'running' }), 'started again elsewhere').to.deep.equal({ status: 'ok', reason: null });
    expect(healthAfter(null, { kind: 'running' })).to.deep.equal({ status: 'ok', reason: null });
  });
});

import { expect } from 'chai';
import { DATABASE_STATUSES, assertTransition, canTransition, nextProvisioningStatus, type DatabaseStatus } from './database-status.js';
import { ConflictError } from './errors.js';

const ALLOWED: readonly [DatabaseStatus, DatabaseStatus][] = [
  ['PENDING', 'REQUESTED'],
  ['REQUESTED', 'BUILT'],
  ['BUILT', 'READY'],
  ['POOLED', 'READY'],
];

describe('database status', () => {
  it('lists the five statuses of the contract', () => {
    expect([...DATABASE_STATUSES]).to.deep.equal(['PENDING', 'REQUESTED', 'BUILT', 'POOLED', 'READY']);
  });

  it('allows exactly the forward transitions of the lifecycle', () => {
    for (const from of DATABASE_STATUSES) {
      for (const to of DATABASE_STATUSES) {
        const expected = ALLOWED.some(([a, b]) => a === from && b === to);
        expect(canTransition(from, to), `${from} -> ${to}`).to.equal(expected);
      }
    }
  });

  it('refuses skipping steps, going backwards and staying in place', () => {
    expect(canTransition('REQUESTED', 'READY')).to.equal(false);
    expect(canTransition('READY', 'BUILT')).to.equal(false);
    expect(canTransition('BUILT', 'REQUESTED')).to.equal(false);
    expect(canTransition('READY', 'READY')).to.equal(false);
    expect(canTransition('PENDING', 'POOLED')).to.equal(false);
  });

  it('assertTransition passes an allowed transition', () => {
    for (const [from, to] of ALLOWED) expect(() => assertTransition(from, to)).not.to.throw();
  });

  it('assertTransition throws ConflictError invalid_status_transition naming both statuses', () => {
    let caught: unknown;
    try {
      assertTransition('READY', 'REQUESTED');
    } catch (error) {
      caught = error;
    }
    expect(caught).to.be.instanceOf(ConflictError);
    expect(caught).to.have.property('kind', 'conflict');
    expect(caught).to.have.property('code', 'invalid_status_transition');
    expect((caught as Error).message).to.contain('READY').and.to.contain('REQUESTED');
  });

  it('nextProvisioningStatus walks each status to READY and stops there', () => {
    expect(nextProvisioningStatus('PENDING')).to.equal('REQUESTED');
    expect(nextProvisioningStatus('REQUESTED')).to.equal('BUILT');
    expect(nextProvisioningStatus('BUILT')).to.equal('READY');
    expect(nextProvisioningStatus('POOLED')).to.equal('READY');
    expect(nextProvisioningStatus('READY')).to.equal(null);
  });

  it('nextProvisioningStatus only proposes allowed transitions', () => {
    for (const status of DATABASE_STATUSES) {
      const next = nextProvisioningStatus(status);
      if (next !== null) expect(canTransition(status, next), `${status} -> ${next}`).to.equal(true);
    }
  });
});

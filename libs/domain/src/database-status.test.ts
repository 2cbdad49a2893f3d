import { expect } from 'chai';
import { DATABASE_STATUSES, nextProvisioningStatus, SHOWN_DATABASE_STATUSES, shownDatabaseStatus } from './database-status.js';

describe('database status', () => {
  it('lists the five statuses of the contract', () => {
    expect([...DATABASE_STATUSES]).to.deep.equal(['PENDING', 'REQUESTED', 'BUILT', 'POOLED', 'READY']);
  });

  it('nextProvisioningStatus walks each status to READY and stops there', () => {
    expect(nextProvisioningStatus('PENDING')).to.equal('REQUESTED');
    expect(nextProvisioningStatus('REQUESTED')).to.equal('BUILT');
    expect(nextProvisioningStatus('BUILT')).to.equal('READY');
    expect(nextProvisioningStatus('POOLED')).to.equal('READY');
    expect(nextProvisioningStatus('READY')).to.equal(null);
  });

  it('shows DELETED for a deleted database, else FAILED for a copy that cannot be made, else its provisioning status', () => {
    expect([...SHOWN_DATABASE_STATUSES]).to.deep.equal(['PENDING', 'REQUESTED', 'BUILT', 'POOLED', 'READY', 'DELETED', 'FAILED']);
    expect(shownDatabaseStatus({ status: 'BUILT', deleted: null })).to.equal('BUILT');
    expect(shownDatabaseStatus({ status: 'REQUESTED', deleted: null, failure: 'out of reach' })).to.equal('FAILED');
    expect(shownDatabaseStatus({ status: 'REQUESTED', deleted: new Date(0), failure: 'out of reach' })).to.equal('DELETED');
    expect(shownDatabaseStatus({ status: 'READY', deleted: null, failure: null })).to.equal('READY');
  });
});

import { expect } from 'chai';
import { DATABASE_STATUSES, nextProvisioningStatus } from './database-status.js';

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
});

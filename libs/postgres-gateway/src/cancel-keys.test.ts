import { expect } from 'chai';
import { INSTANCE_CANCEL_SLOTS, REGIONS, regionId } from '@platform/domain';
import { MAX_CLUSTER_INDEX, backendOfProcessId, clientProcessId } from './cancel-keys.js';

describe('cancel keys', () => {
  it('round-trips a cluster index and a backend pid through a positive Int32', () => {
    for (const [index, pid] of [[0, 1], [1, 4_194_303], [3, 12345], [MAX_CLUSTER_INDEX, 4_194_303]]) {
      const processId = clientProcessId(index, pid);
      expect(processId).to.be.within(0, 2 ** 31 - 1);
      expect(backendOfProcessId(processId)).to.deep.equal({ clusterIndex: index, backendPid: pid });
    }
  });

  it('refuses what does not fit', () => {
    expect(() => clientProcessId(MAX_CLUSTER_INDEX + 1, 1)).to.throw(/out of range/);
    expect(() => clientProcessId(1, 4_194_304)).to.throw(/22 bits/);
  });

  it('has room for every cancel slot the domain hands out, and regions’ clusters stay below the instances’', () => {
    expect(INSTANCE_CANCEL_SLOTS.last).to.equal(MAX_CLUSTER_INDEX);
    for (const region of REGIONS) expect(regionId(region)).to.be.below(INSTANCE_CANCEL_SLOTS.first);
  });
});

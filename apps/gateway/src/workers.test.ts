import { expect } from 'chai';
import { poolSize } from '@platform/postgres-gateway';
import { defaultWorkers, loadGatewayConfig } from './config.js';
import { workerShare } from './workers.js';

const ENV = { DATABASE_URL: 'postgres://u:p@localhost:1/control', GATEWAY_ALLOW_PLAIN: 'true' };

describe('gateway workers: defaults and shares', function () {
  it('defaults to one worker per core, at most 8', function () {
    expect([1, 2, 8, 96].map(defaultWorkers)).to.deep.equal([1, 2, 8, 8]);
  });

  it('gives each worker its cap divided by the workers, rounded down and at least 1, so that together they never pass the cap', function () {
    const config = loadGatewayConfig({ ...ENV, GATEWAY_WORKERS: '3', GATEWAY_MAX_LOGINS_PER_USER: '50', GATEWAY_MAX_LOGINS_PER_USER_ADDRESS: '1', GATEWAY_MAX_CONNECTIONS: '10000' });
    const share = workerShare(config);
    expect([share.maxLoginsPerUser, share.maxLoginsPerUserAddress, share.maxConnections, share.maxLoginsPerAddress]).to.deep.equal([16, 1, 3333, 33]);
    // The control-plane pool of 10: 3 each, at least 2.
    expect(share.controlPlanePoolSize).to.equal(3);
    expect(workerShare({ ...config, workers: 8 }).controlPlanePoolSize).to.equal(2);
    // Each pooled endpoint's pool: its size divided among the 3 workers. A database's default limit of 100
    // sessions makes pools of 20 (a fifth): 6 server sessions per worker, 18 in all; GATEWAY_POOL_SIZE=5: 1 each.
    expect(share.pools).to.include({ size: null, workers: 3 });
    expect([poolSize(share.pools, 100), poolSize(config.pools, 100)]).to.deep.equal([6, 20]);
    expect(poolSize(workerShare(loadGatewayConfig({ ...ENV, GATEWAY_WORKERS: '3', GATEWAY_POOL_SIZE: '5' })).pools, 100)).to.equal(1);
  });
});

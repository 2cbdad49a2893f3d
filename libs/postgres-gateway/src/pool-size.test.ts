import { expect } from 'chai';
import { poolSize, sessionLimit } from './pool-size.js';
import { DEFAULT_POOL_SETTINGS, ServerPools, type PoolLogin } from './server-pool.js';
import type { ScramVerifier } from './scram-keys.js';

const unset = { size: null, workers: 1 };

describe('pool sizes', function () {
  it('takes a fifth of the connection limit when GATEWAY_POOL_SIZE is unset, at least 1', function () {
    expect([100, 200, 400, 10, 9, 5, 4, 1, 0].map((limit) => poolSize(unset, limit))).to.deep.equal([20, 40, 80, 2, 1, 1, 1, 1, 1]);
  });

  it('takes GATEWAY_POOL_SIZE when set, but never more than the limit itself', function () {
    expect([100, 10, 3, 0].map((limit) => poolSize({ size: 8, workers: 1 }, limit))).to.deep.equal([8, 8, 3, 1]);
  });

  it('takes the setting, or 20, when no limit is known', function () {
    expect([poolSize(unset, null), poolSize({ size: 7, workers: 1 }, null)]).to.deep.equal([20, 7]);
  });

  it('divides a pool among the workers, rounded down and at least 1, so that together they hold no more than its size', function () {
    expect([1, 2, 3, 8].map((workers) => poolSize({ size: null, workers }, 100))).to.deep.equal([20, 10, 6, 2]);
    expect([1, 2, 3].map((workers) => poolSize({ size: null, workers }, 10))).to.deep.equal([2, 1, 1]);
    expect(poolSize({ size: 9, workers: 4 }, 100)).to.equal(2);
  });

  it('limits a login by the smaller of its database’s and its role’s limits, -1 being none', function () {
    expect([sessionLimit(100, 100), sessionLimit(10, 100), sessionLimit(100, 5), sessionLimit(-1, 40), sessionLimit(30, -1), sessionLimit(-1, -1), sessionLimit(null, 100), sessionLimit(null, -1)]).to.deep.equal([
      100,
      10,
      5,
      40,
      30,
      null,
      100,
      null,
    ]);
    // A database paused by a move (limit 0): its pool keeps one server session's room, which the server refuses until the move ends.
    expect(poolSize(unset, sessionLimit(0, 100))).to.equal(1);
  });
});

describe('server pools: a size per pool', function () {
  const verifier = { storedKey: Buffer.alloc(32, 1) } as unknown as ScramVerifier;
  const login = (role: string, connectionLimit: number | null): PoolLogin => ({
    backend: { host: '127.0.0.1', port: 1, index: 1 },
    physicalName: 'db_x',
    role,
    verifier,
    clientKey: Buffer.alloc(32),
    connectionLimit,
  });

  it('sizes each pool from its own login’s limit', function () {
    const pools = new ServerPools(DEFAULT_POOL_SETTINGS, () => {});
    expect([pools.poolFor(login('cred_a', 10)), pools.poolFor(login('cred_b', 100)), pools.poolFor(login('cred_c', null))].map((pool) => pool.settings.size)).to.deep.equal([2, 20, 20]);
  });

  it('gives a pool whose limit changed its new size, and keeps the pool', function () {
    const pools = new ServerPools({ ...DEFAULT_POOL_SETTINGS, workers: 2 }, () => {});
    const pool = pools.poolFor(login('cred_a', 100));
    expect(pool.settings.size).to.equal(10);
    const again = pools.poolFor(login('cred_a', 20));
    expect([again === pool, pool.settings.size, pool.login.connectionLimit]).to.deep.equal([true, 2, 20]);
  });

  it('applies GATEWAY_POOL_SIZE up to each pool’s limit', function () {
    const pools = new ServerPools({ ...DEFAULT_POOL_SETTINGS, size: 30 }, () => {});
    expect([pools.poolFor(login('cred_a', 100)).settings.size, pools.poolFor(login('cred_b', 12)).settings.size]).to.deep.equal([30, 12]);
  });
});

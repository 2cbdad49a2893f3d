import { expect } from 'chai';
import { mayServeAtOnce, nextToServe, RESTING_MS, roomToOpen, type DatabaseCounts } from './connection-grants.js';

const LIMITS = { connectionsPerCluster: 10, connectionsPerDatabase: 4, activePerCluster: 8, openingPerCluster: 2 };
const NOW = 1_000_000;

function database(name: string, counts: Partial<DatabaseCounts> = {}): DatabaseCounts & { name: string } {
  return { name, active: 0, idle: 0, waiting: 1, ...counts };
}

const counts = (each: DatabaseCounts) => each;

describe('connection grants', function () {
  describe('mayServeAtOnce', function () {
    it('serves at once a database nobody of which waits, under its own limit and the cluster’s', function () {
      const cluster = { open: 5, active: 3, opening: 0 };
      expect(mayServeAtOnce(database('a', { waiting: 0, active: 3 }), cluster, LIMITS)).to.equal(true);
    });

    it('queues behind its own database’s waiting requests: first come, first served', function () {
      expect(mayServeAtOnce(database('a', { waiting: 1 }), { open: 0, active: 0, opening: 0 }, LIMITS)).to.equal(false);
    });

    it('queues at the database’s limit, and at the cluster’s limit of connections in use', function () {
      expect(mayServeAtOnce(database('a', { waiting: 0, active: 4 }), { open: 4, active: 4, opening: 0 }, LIMITS)).to.equal(false);
      expect(mayServeAtOnce(database('a', { waiting: 0 }), { open: 8, active: 8, opening: 0 }, LIMITS)).to.equal(false);
    });
  });

  describe('roomToOpen', function () {
    const full = { open: 10, active: 4, opening: 0 };

    it('opens while the budget has room, and never more than openingPerCluster logins at once', function () {
      expect(roomToOpen(database('a'), { open: 9, active: 0, opening: 1, oldestIdleSince: undefined }, LIMITS, NOW)).to.equal('room');
      expect(roomToOpen(database('a'), { open: 3, active: 0, opening: 2, oldestIdleSince: undefined }, LIMITS, NOW)).to.equal('none');
    });

    it('with the budget spent, closes the cluster’s oldest idle connection for a database that holds none, however fresh', function () {
      expect(roomToOpen(database('a'), { ...full, oldestIdleSince: NOW - 1 }, LIMITS, NOW)).to.equal('close-oldest-idle');
    });

    it('for a database that holds some, closes only an idle connection at rest', function () {
      const holding = database('a', { active: 1 });
      expect(roomToOpen(holding, { ...full, oldestIdleSince: NOW - RESTING_MS + 1 }, LIMITS, NOW)).to.equal('none');
      expect(roomToOpen(holding, { ...full, oldestIdleSince: NOW - RESTING_MS - 1 }, LIMITS, NOW)).to.equal('close-oldest-idle');
      expect(roomToOpen(database('b', { idle: 1 }), { ...full, oldestIdleSince: NOW - 10 }, LIMITS, NOW)).to.equal('none');
    });

    it('has nothing to close when no connection is idle', function () {
      expect(roomToOpen(database('a'), { ...full, oldestIdleSince: undefined }, LIMITS, NOW)).to.equal('none');
    });
  });

  describe('nextToServe', function () {
    const cluster = { open: 6, active: 4, opening: 0 };

    it('serves first a waiting database that holds no connection, even behind others', function () {
      const waiting = [database('busy', { active: 2, idle: 1 }), database('starved', { active: 0 })];
      expect(nextToServe(waiting, counts, cluster, LIMITS)?.name).to.equal('starved');
    });

    it('then one that can reuse its own idle connection, then the one with the fewest in use', function () {
      expect(nextToServe([database('a', { active: 1 }), database('b', { active: 3, idle: 1 })], counts, cluster, LIMITS)?.name).to.equal('b');
      expect(nextToServe([database('a', { active: 3 }), database('b', { active: 1 }), database('c', { active: 2 })], counts, cluster, LIMITS)?.name).to.equal('b');
      // Equal: the one that began to wait first.
      expect(nextToServe([database('a', { active: 2 }), database('b', { active: 2 })], counts, cluster, LIMITS)?.name).to.equal('a');
    });

    it('skips databases at their own limit, and serves nobody at the cluster’s limit of connections in use', function () {
      expect(nextToServe([database('full', { active: 4, idle: 1 }), database('b', { active: 1 })], counts, cluster, LIMITS)?.name).to.equal('b');
      expect(nextToServe([database('a')], counts, { open: 8, active: 8, opening: 0 }, LIMITS)).to.equal(undefined);
    });

    it('while every login slot is taken, serves only databases that reuse their own idle connection', function () {
      const busyLogins = { open: 6, active: 2, opening: 2 };
      expect(nextToServe([database('cold'), database('warm', { active: 1, idle: 1 })], counts, busyLogins, LIMITS)?.name).to.equal('warm');
      expect(nextToServe([database('cold')], counts, busyLogins, LIMITS)).to.equal(undefined);
    });
  });
});

import { expect } from 'chai';
import type { BackupRecord } from '@platform/postgres-launcher';
import { dueBackup } from './backup-scheduler.js';

const HOUR = 3_600_000;
const schedule = { fullEveryMs: 7 * 24 * HOUR, diffEveryMs: 24 * HOUR };
const now = new Date('2026-11-26T12:00:00Z');

function taken(type: BackupRecord['type'], hoursAgo: number): BackupRecord {
  const at = new Date(now.getTime() - hoursAgo * HOUR);
  return { label: `${type}-${hoursAgo}`, type, startedAt: at, finishedAt: at, walStart: '000000010000000000000002', walStop: '000000010000000000000002', repositoryBytes: 1 };
}

describe('dueBackup', function () {
  it('asks for a full backup when there is none, or the newest full one is as old as the full interval', function () {
    expect(dueBackup([], now, schedule)).to.equal('full');
    expect(dueBackup([taken('full', 7 * 24), taken('diff', 1)], now, schedule)).to.equal('full');
  });

  it('asks for a differential backup when the newest backup is as old as the differential interval', function () {
    expect(dueBackup([taken('full', 48), taken('diff', 24)], now, schedule)).to.equal('diff');
    expect(dueBackup([taken('full', 24)], now, schedule)).to.equal('diff');
  });

  it('asks for nothing while the newest backups are recent enough', function () {
    expect(dueBackup([taken('full', 30), taken('diff', 5)], now, schedule)).to.equal(null);
    expect(dueBackup([taken('full', 1)], now, schedule)).to.equal(null);
  });
});

import { expect } from 'chai';
import { archiverState, parseArchiveListing, parseBackupInfo, restoreWindow, segmentNumber, type ArchivedSegment, type BackupRecord } from './wal-archive.js';

const PER_LOG = 256;

function segment(log: number, seg: number, archivedAt = new Date(0)): ArchivedSegment {
  const hex = (value: number) => value.toString(16).toUpperCase().padStart(8, '0');
  return { name: `00000001${hex(log)}${hex(seg)}`, archivedAt };
}

function backup(label: string, walStart: string, finishedAt: Date): BackupRecord {
  return { label, type: 'full', startedAt: finishedAt, finishedAt, walStart, walStop: walStart, repositoryBytes: 1 };
}

describe('reading the WAL archive', function () {
  it('numbers segments across a log boundary', function () {
    expect(segmentNumber(segment(0, 0xff).name, PER_LOG) + 1).to.equal(segmentNumber(segment(1, 0).name, PER_LOG));
  });

  it("reads a stanza's backups from pgbackrest info, oldest first, leaving out failed ones", function () {
    const json = JSON.stringify([
      {
        name: 'main',
        backup: [
          { label: 'B', type: 'diff', timestamp: { start: 20, stop: 30 }, archive: { start: 'b', stop: 'c' }, info: { repository: { delta: 5 } } },
          { label: 'A', type: 'full', timestamp: { start: 1, stop: 10 }, archive: { start: 'a', stop: 'b' }, info: { repository: { delta: 50 } } },
          { label: 'X', type: 'incr', error: true, timestamp: { start: 40, stop: 50 }, archive: { start: 'd', stop: 'd' }, info: { repository: { delta: 1 } } },
        ],
      },
      { name: 'other', backup: [] },
    ]);
    const backups = parseBackupInfo(json, 'main');
    expect(backups.map((entry) => entry.label)).to.deep.equal(['A', 'B']);
    expect(backups[0]).to.deep.include({ type: 'full', walStart: 'a', repositoryBytes: 50 });
    expect(backups[0].finishedAt.toISOString()).to.equal('1970-01-01T00:00:10.000Z');
    expect(parseBackupInfo('[]', 'main')).to.deep.equal([]);
  });

  it('lists only WAL segments from a repo-ls listing', function () {
    const listing = JSON.stringify({
      '.': { type: 'path' },
      '18-1/0000000100000000': { type: 'path' },
      '18-1/0000000100000000/000000010000000000000002-70532f2be6970647cc5c713564f223d8eef41a2c.zst': { type: 'file', size: 1, time: 100 },
      '18-1/0000000100000000/000000010000000000000002.00000028.backup': { type: 'file', size: 1, time: 101 },
      '18-1/0000000100000000/000000010000000000000001-af243a61af92313f3e01e0dc74d2f0da14e3d5e7': { type: 'file', size: 1, time: 99 },
      '18-1/00000002.history': { type: 'file', size: 1, time: 102 },
    });
    expect(parseArchiveListing(listing).map((entry) => entry.name)).to.deep.equal(['000000010000000000000001', '000000010000000000000002']);
  });

  it('reaches from the oldest backup to the newest segment when nothing is missing', function () {
    const segments = [segment(0, 1), segment(0, 2), segment(0, 0xff), ...[...Array(0xfc).keys()].map((i) => segment(0, i + 3)), segment(1, 0, new Date(5000))];
    const window = restoreWindow([backup('A', segment(0, 2).name, new Date(1000)), backup('B', segment(0, 0x80).name, new Date(2000))], segments, PER_LOG);
    expect(window).to.deep.equal({ from: new Date(2000), to: new Date(5000), hasGap: false });
  });

  it('starts after a gap in the WAL at the first backup that follows it, and says there is a gap', function () {
    const segments = [segment(0, 2), segment(0, 3), segment(0, 6), segment(0, 7), segment(0, 8, new Date(9000))];
    const before = backup('A', segment(0, 2).name, new Date(1000));
    expect(restoreWindow([before], segments, PER_LOG)).to.deep.equal({ from: null, to: new Date(9000), hasGap: true });
    const after = backup('B', segment(0, 7).name, new Date(8000));
    expect(restoreWindow([before, after], segments, PER_LOG)).to.deep.equal({ from: new Date(9000), to: new Date(9000), hasGap: true });
    expect(restoreWindow([], [], PER_LOG)).to.deep.equal({ from: null, to: null, hasGap: false });
  });

  it('sees a gap at the head when the server counts as archived a segment the repository lacks (dropped)', function () {
    const segments = [segment(0, 2), segment(0, 3, new Date(3000))];
    const backups = [backup('A', segment(0, 2).name, new Date(1000))];
    expect(restoreWindow(backups, segments, PER_LOG, segment(0, 3).name)).to.deep.equal({ from: new Date(2000), to: new Date(3000), hasGap: false });
    expect(restoreWindow(backups, segments, PER_LOG, segment(0, 6).name)).to.deep.equal({ from: null, to: new Date(3000), hasGap: true });
  });

  it('calls the archiver failing while its newest failure is later than its newest success', function () {
    expect(archiverState('off', null, null)).to.equal('off');
    expect(archiverState('on', null, null)).to.equal('ok');
    expect(archiverState('on', null, new Date(1))).to.equal('failing');
    expect(archiverState('on', new Date(2), new Date(1))).to.equal('ok');
    expect(archiverState('always', new Date(1), new Date(2))).to.equal('failing');
  });
});

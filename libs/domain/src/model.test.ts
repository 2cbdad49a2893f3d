import { expect } from 'chai';
import { isValidDatabaseName } from './database-name.js';
import { physicalDatabaseName } from './model.js';
import { REGIONS, isRegion } from './regions.js';

describe('physicalDatabaseName', () => {
  it('prefixes db_ and removes the hyphens of the id', () => {
    expect(physicalDatabaseName('0b7e3c1a-5f0e-4c7e-9d7a-1b2c3d4e5f60')).to.equal('db_0b7e3c1a5f0e4c7e9d7a1b2c3d4e5f60');
  });

  it('gives a valid PostgreSQL identifier for a UUID (35 characters)', () => {
    const name = physicalDatabaseName('ffffffff-ffff-ffff-ffff-ffffffffffff');
    expect(name).to.have.length(35);
    expect(isValidDatabaseName(name)).to.equal(true);
  });

  it('is stable and distinct per id', () => {
    const a = physicalDatabaseName('00000000-0000-0000-0000-000000000001');
    const b = physicalDatabaseName('00000000-0000-0000-0000-000000000002');
    expect(a).to.equal(physicalDatabaseName('00000000-0000-0000-0000-000000000001'));
    expect(a).not.to.equal(b);
  });
});

describe('regions', () => {
  it('knows the three regions', () => {
    expect([...REGIONS]).to.deep.equal(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1', 'AZURE_EASTUS']);
  });

  it('isRegion accepts exactly those names', () => {
    for (const region of REGIONS) expect(isRegion(region)).to.equal(true);
    for (const value of ['aws_us_west_2', 'AWS_US_WEST_3', '', 'AZURE_EASTUS ', 'toString']) {
      expect(isRegion(value), value).to.equal(false);
    }
  });
});

import { expect } from 'chai';
import { ScryptPasswordHasher } from './password-hasher.js';

// logN 10 keeps each hash at a few milliseconds; the cost travels inside every hash.
describe('ScryptPasswordHasher', function () {
  const hasher = new ScryptPasswordHasher(10);

  it('verifies the password it hashed', async function () {
    const hash = await hasher.hash('correct horse battery staple');
    expect(await hasher.verify('correct horse battery staple', hash)).to.equal(true);
  });

  it('refuses a wrong password', async function () {
    const hash = await hasher.hash('correct horse battery staple');
    expect(await hasher.verify('correct horse battery stapler', hash)).to.equal(false);
    expect(await hasher.verify('', hash)).to.equal(false);
  });

  it('salts: two hashes of one password differ, and both verify', async function () {
    const [first, second] = await Promise.all([hasher.hash('same password'), hasher.hash('same password')]);
    expect(first).to.not.equal(second);
    expect(await hasher.verify('same password', first)).to.equal(true);
    expect(await hasher.verify('same password', second)).to.equal(true);
  });

  it('reads the cost from the hash, so a hasher with another cost still verifies it', async function () {
    const hash = await hasher.hash('cost travels with the hash');
    expect(await new ScryptPasswordHasher(11).verify('cost travels with the hash', hash)).to.equal(true);
  });

  it('answers false, without throwing, for hashes that are not scrypt-kdf hashes', async function () {
    const valid = Buffer.from(await hasher.hash('password123'), 'base64');
    const garbage = [
      '',
      'not a hash',
      '%%%***',
      Buffer.from('scrypt').toString('base64'),
      Buffer.alloc(96, 7).toString('base64'),
      valid.subarray(0, 40).toString('base64'),
      Buffer.concat([valid.subarray(0, 60), Buffer.alloc(36)]).toString('base64'),
    ];
    for (const hash of garbage) {
      expect(await hasher.verify('password123', hash), JSON.stringify(hash)).to.equal(false);
    }
  });

  it('verifyNothing resolves false, every time', async function () {
    expect(await hasher.verifyNothing('any password')).to.equal(false);
    expect(await hasher.verifyNothing('another password')).to.equal(false);
  });

  it('refuses a cost outside 1..20 or not an integer', function () {
    expect(() => new ScryptPasswordHasher(0)).to.throw(/out of range/);
    expect(() => new ScryptPasswordHasher(21)).to.throw(/out of range/);
    expect(() => new ScryptPasswordHasher(10.5)).to.throw(/out of range/);
    expect(() => new ScryptPasswordHasher(Number.NaN)).to.throw(/out of range/);
    expect(() => new ScryptPasswordHasher(1)).to.not.throw();
    expect(() => new ScryptPasswordHasher(20)).to.not.throw();
  });
});

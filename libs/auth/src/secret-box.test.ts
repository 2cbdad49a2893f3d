import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { parseKeyRing, readSecretBox, requireSecretBox, SecretBox } from './secret-box.js';

const key = (id: string) => ({ id, key: randomBytes(32) });
const failure = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a failure');
};

describe('SecretBox', function () {
  const old = key('2026-01');
  const current = key('2026-11');
  const AAD = 'sso-registration:0b5c7c2e-5a0e-4a52-9f1d-1f0f8a0b3c11';

  it('seals with the first key and opens what it sealed, never holding the plaintext in the text', function () {
    const box = new SecretBox([current, old]);
    const sealed = box.seal('client secret: s3cr3t', AAD);
    expect(sealed).to.match(/^v1\.2026-11\.[\w-]{16}\.[\w-]+$/);
    expect(sealed).not.to.include('s3cr3t');
    expect(box.open(sealed, AAD)).to.equal('client secret: s3cr3t');
    // A fresh IV each time: the same secret seals differently.
    expect(box.seal('client secret: s3cr3t', AAD)).not.to.equal(sealed);
  });

  it('rotates: a ring with a new key first still opens what the old one sealed, and says it should be sealed again', function () {
    const sealedBefore = new SecretBox([old]).seal('secret', AAD);
    const rotated = new SecretBox([current, old]);
    expect(rotated.open(sealedBefore, AAD)).to.equal('secret');
    expect(rotated.needsResealing(sealedBefore)).to.equal(true);
    expect(rotated.needsResealing(rotated.seal('secret', AAD))).to.equal(false);
    // Once the old key leaves the ring, what it sealed no longer opens.
    expect(failure(() => new SecretBox([current]).open(sealedBefore, AAD))).to.equal("sealed with key '2026-01', which is not in the ring");
  });

  it('derives a ring for another use: neither opens what the other sealed, and it rotates with its parent', function () {
    const parent = new SecretBox([current, old]);
    const cookies = parent.derive('nile.sso-state');
    const sealed = cookies.seal('state', AAD);
    expect(sealed).to.match(/^v1\.2026-11\./);
    expect(new SecretBox([current]).derive('nile.sso-state').open(sealed, AAD)).to.equal('state');
    expect(failure(() => parent.open(sealed, AAD))).to.equal('Unsupported state or unable to authenticate data');
    expect(failure(() => parent.derive('another use').open(sealed, AAD))).to.equal('Unsupported state or unable to authenticate data');
    expect(failure(() => cookies.open(parent.seal('state', AAD), AAD))).to.equal('Unsupported state or unable to authenticate data');
    const sealedByOld = new SecretBox([old]).derive('nile.sso-state').seal('state', AAD);
    expect(cookies.open(sealedByOld, AAD)).to.equal('state');
  });

  it('refuses a ciphertext moved to another row, altered, or not one at all', function () {
    const box = new SecretBox([current]);
    const sealed = box.seal('secret', AAD);
    expect(failure(() => box.open(sealed, 'sso-registration:another'))).to.match(/unable to authenticate data/);
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[3], 'base64url');
    flipped[0] ^= 1;
    expect(failure(() => box.open([...parts.slice(0, 3), flipped.toString('base64url')].join('.'), AAD))).to.match(/unable to authenticate data/);
    for (const text of ['', 'secret', 'v2.2026-11.a.b', 'v1.2026-11.aaaa', `${sealed}.x`, 'v1.2026-11.aaaa.YQ']) {
      expect(failure(() => box.open(text, AAD)), text).to.match(/not a sealed secret|unable to authenticate/);
    }
  });

  it('refuses a ring without keys, with a short key, a bad id or a repeated id', function () {
    expect(failure(() => new SecretBox([]))).to.equal('a secret box needs at least one key');
    expect(failure(() => new SecretBox([{ id: 'k', key: randomBytes(16) }]))).to.equal("key 'k' must be 32 bytes");
    expect(failure(() => new SecretBox([{ id: 'a.b', key: randomBytes(32) }]))).to.equal("key id 'a.b' must be 1 to 32 letters, digits, - or _");
    expect(failure(() => new SecretBox([key('same'), key('same')]))).to.equal('key ids must differ');
  });
});

describe('parseKeyRing', function () {
  it('reads id:base64 entries in order, and names what is wrong without echoing a key', function () {
    const a = randomBytes(32).toString('base64');
    const b = randomBytes(32).toString('base64');
    expect(parseKeyRing(` new:${a} , old:${b}`).map(({ id, key }) => [id, key.toString('base64')])).to.deep.equal([
      ['new', a],
      ['old', b],
    ]);
    expect(failure(() => parseKeyRing(a))).to.equal('entry 1 must be id:base64key');
    const short = randomBytes(8).toString('base64');
    const message = failure(() => parseKeyRing(`k:${short}`));
    expect(message).to.equal("key 'k' must be 32 bytes of base64 (openssl rand -base64 32)");
    expect(message).not.to.include(short);
  });
});

describe('readSecretBox and requireSecretBox', function () {
  const ring = `k1:${randomBytes(32).toString('base64')}`;

  it('read the ring in the variable they are given, the first key sealing', function () {
    expect(readSecretBox({ SOME_KEYS: ring }, 'SOME_KEYS')?.currentKeyId).to.equal('k1');
    expect(requireSecretBox({ SOME_KEYS: ring }, 'SOME_KEYS', 'it seals things').currentKeyId).to.equal('k1');
  });

  it('name the variable when it is malformed, or unset where it is required', function () {
    expect(readSecretBox({}, 'SOME_KEYS')).to.equal(null);
    expect(readSecretBox({ SOME_KEYS: '  ' }, 'SOME_KEYS')).to.equal(null);
    expect(failure(() => readSecretBox({ SOME_KEYS: 'k1:c2hvcnQ=' }, 'SOME_KEYS'))).to.equal("SOME_KEYS: key 'k1' must be 32 bytes of base64 (openssl rand -base64 32)");
    expect(failure(() => requireSecretBox({}, 'SOME_KEYS', 'it seals things'))).to.match(/^SOME_KEYS: is required: it seals things/);
  });
});

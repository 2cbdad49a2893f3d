import { expect } from 'chai';
import { createHash, createHmac } from 'node:crypto';
import { scramVerifier, scramVerifierWithSalt } from './scram-verifier.js';

/** The exchange of RFC 7677, section 3 (user "user", password "pencil"). */
const RFC_7677 = {
  salt: 'W22ZaJ0SNY7soEsUEjb6gQ==',
  authMessage:
    'n=user,r=rOprNGfwEbeRWgbNEkqO,' +
    'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,' +
    'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  clientProof: 'dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverSignature: '6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

function parse(verifier: string): { iterations: number; salt: string; storedKey: Buffer; serverKey: Buffer } {
  const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier);
  if (!match) throw new Error(`not a verifier: ${verifier}`);
  return { iterations: Number(match[1]), salt: match[2], storedKey: Buffer.from(match[3], 'base64'), serverKey: Buffer.from(match[4], 'base64') };
}

describe('scramVerifier', function () {
  it('stores the keys of RFC 7677: the server signature and the client proof of its exchange check out', function () {
    const verifier = parse(scramVerifierWithSalt('pencil', Buffer.from(RFC_7677.salt, 'base64')));
    expect(verifier.iterations).to.equal(4096);
    expect(verifier.salt).to.equal(RFC_7677.salt);
    expect(createHmac('sha256', verifier.serverKey).update(RFC_7677.authMessage).digest('base64')).to.equal(RFC_7677.serverSignature);
    const clientSignature = createHmac('sha256', verifier.storedKey).update(RFC_7677.authMessage).digest();
    const clientKey = Buffer.from(RFC_7677.clientProof, 'base64').map((byte, i) => byte ^ clientSignature[i]);
    expect(createHash('sha256').update(clientKey).digest().equals(verifier.storedKey)).to.equal(true);
  });

  it('salts every verifier afresh with 16 bytes, 4096 iterations', function () {
    const [one, two] = [parse(scramVerifier('same password')), parse(scramVerifier('same password'))];
    expect(Buffer.from(one.salt, 'base64').length).to.equal(16);
    expect(one.iterations).to.equal(4096);
    expect(one.salt).not.to.equal(two.salt);
    expect(one.storedKey.equals(two.storedKey)).to.equal(false);
  });

  it('refuses a password that is not printable ASCII', function () {
    expect(() => scramVerifier('pässword')).to.throw('scramVerifier: passwords must be printable ASCII');
  });
});

import { expect } from 'chai';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDevelopmentCertificates, type DevelopmentCertificates } from './development-certificates.js';

const DAY_MS = 86_400_000;
const HOSTS = ['localhost', '127.0.0.1', '::1'];

describe('ensureDevelopmentCertificates', function () {
  let scratch: string;
  let dir: string;

  beforeEach(function () {
    scratch = mkdtempSync(join(tmpdir(), 'dev-tls-'));
    dir = join(scratch, 'tls');
  });

  afterEach(function () {
    rmSync(scratch, { recursive: true, force: true });
  });

  /** The four files' contents, to tell which a call rewrote. */
  function contents(made: DevelopmentCertificates): Record<'caCert' | 'caKey' | 'serverCert' | 'serverKey', string> {
    return {
      caCert: readFileSync(made.caCert, 'utf8'),
      caKey: readFileSync(made.caKey, 'utf8'),
      serverCert: readFileSync(made.serverCert, 'utf8'),
      serverKey: readFileSync(made.serverKey, 'utf8'),
    };
  }

  function issuedByCa(made: DevelopmentCertificates): boolean {
    return new X509Certificate(readFileSync(made.serverCert)).verify(new X509Certificate(readFileSync(made.caCert)).publicKey);
  }

  it('makes a private folder with the authority and a server certificate, then reuses them', async function () {
    const first = await ensureDevelopmentCertificates(dir, HOSTS);
    expect(first).to.deep.equal({
      caCert: join(dir, 'ca.crt'),
      caKey: join(dir, 'ca.key'),
      serverCert: join(dir, 'server.crt'),
      serverKey: join(dir, 'server.key'),
      created: { authority: true, server: true },
    });
    expect(statSync(dir).mode & 0o777).to.equal(0o700);
    expect([first.caKey, first.serverKey].map((path) => statSync(path).mode & 0o777)).to.deep.equal([0o600, 0o600]);
    expect(issuedByCa(first)).to.equal(true);
    const before = contents(first);

    const second = await ensureDevelopmentCertificates(dir, ['127.0.0.1', 'localhost']);
    expect(second.created).to.deep.equal({ authority: false, server: false });
    expect(contents(second)).to.deep.equal(before);
  });

  it('re-issues only the server certificate for hosts it does not cover, with the same authority', async function () {
    const before = contents(await ensureDevelopmentCertificates(dir, HOSTS));
    const made = await ensureDevelopmentCertificates(dir, [...HOSTS, 'db.example.test', '[fd00::5]']);
    expect(made.created).to.deep.equal({ authority: false, server: true });
    const after = contents(made);
    expect([after.caCert, after.caKey]).to.deep.equal([before.caCert, before.caKey]);
    expect(after.serverKey).to.not.equal(before.serverKey);
    expect(new X509Certificate(after.serverCert).subjectAltName).to.equal(
      'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:db.example.test, IP Address:FD00:0:0:0:0:0:0:5',
    );
    expect(issuedByCa(made)).to.equal(true);
  });

  it('re-issues the server certificate when it is missing or ends within 30 days', async function () {
    const made = await ensureDevelopmentCertificates(dir, HOSTS);
    const original = contents(made);
    unlinkSync(made.serverKey);
    expect((await ensureDevelopmentCertificates(dir, HOSTS)).created).to.deep.equal({ authority: false, server: true });
    const reissued = contents(made);
    expect(reissued.serverCert).to.not.equal(original.serverCert);

    // The certificate is good for 365 days: 334 days on, it still has 31; 336 days on, 29.
    const later = (days: number) => ({ now: new Date(Date.now() + days * DAY_MS) });
    expect((await ensureDevelopmentCertificates(dir, HOSTS, later(334))).created).to.deep.equal({ authority: false, server: false });
    expect((await ensureDevelopmentCertificates(dir, HOSTS, later(336))).created).to.deep.equal({ authority: false, server: true });
    expect(contents(made).caCert).to.equal(original.caCert);
    expect(contents(made).serverCert).to.not.equal(reissued.serverCert);
  });

  it('makes everything anew when the authority is missing, unreadable or ends within 30 days', async function () {
    const made = await ensureDevelopmentCertificates(dir, HOSTS);
    const original = contents(made);
    unlinkSync(made.caKey);
    expect((await ensureDevelopmentCertificates(dir, HOSTS)).created).to.deep.equal({ authority: true, server: true });
    const remade = contents(made);
    expect(remade.caCert).to.not.equal(original.caCert);
    expect(issuedByCa(made)).to.equal(true);

    writeFileSync(made.caCert, 'not a certificate\n');
    expect((await ensureDevelopmentCertificates(dir, HOSTS)).created).to.deep.equal({ authority: true, server: true });
    expect(issuedByCa(made)).to.equal(true);

    const nearEnd = { now: new Date(Date.now() + 3625 * DAY_MS) };
    expect((await ensureDevelopmentCertificates(dir, HOSTS, nearEnd)).created).to.deep.equal({ authority: true, server: true });
    expect(issuedByCa(made)).to.equal(true);
  });

  it('makes the server certificate anew when its key does not belong to it', async function () {
    const made = await ensureDevelopmentCertificates(dir, HOSTS);
    writeFileSync(made.serverKey, readFileSync(made.caKey));
    expect((await ensureDevelopmentCertificates(dir, HOSTS)).created).to.deep.equal({ authority: false, server: true });
    expect(new X509Certificate(readFileSync(made.serverCert)).checkPrivateKey(createPrivateKey(readFileSync(made.serverKey)))).to.equal(true);
  });
});

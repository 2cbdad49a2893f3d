import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { createCertificateAuthority, issueServerCertificate, type PemPair } from './certificates.js';

const DAY_MS = 86_400_000;

/** A TLS client that trusts only `ca`: 'authorized', or the code of the error that refused the server. */
async function handshake(port: number, ca: string, target: { host: string; servername?: string }, checked: string[] = []): Promise<string> {
  const socket = tls.connect({
    port,
    host: target.host,
    servername: target.servername,
    ca,
    // Node's own check, noting which name it was asked about.
    checkServerIdentity: (hostname, cert) => (checked.push(hostname), tls.checkServerIdentity(hostname, cert)),
  });
  try {
    await once(socket, 'secureConnect');
    return socket.authorized ? 'authorized' : `unauthorized: ${socket.authorizationError}`;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  } finally {
    socket.destroy();
  }
}

describe('development certificates', function () {
  let ca: PemPair;
  let otherCa: PemPair;
  let server: PemPair;
  let tlsServer: tls.Server;
  let port: number;

  before(async function () {
    ca = await createCertificateAuthority();
    otherCa = await createCertificateAuthority();
    server = await issueServerCertificate(ca, { hosts: ['localhost', '127.0.0.1', '[::1]'] });
    tlsServer = tls.createServer({ cert: server.cert, key: server.key }, (socket) => socket.end('hello'));
    tlsServer.on('tlsClientError', () => undefined);
    tlsServer.listen(0, '127.0.0.1');
    await once(tlsServer, 'listening');
    port = (tlsServer.address() as AddressInfo).port;
  });

  after(function () {
    tlsServer?.close();
  });

  it('makes an ECDSA P-256 authority for about ten years that may sign server certificates only', function () {
    const cert = new X509Certificate(ca.cert);
    expect(cert.ca).to.equal(true);
    expect(cert.subject).to.match(/^CN=Platform development CA [0-9a-f]{8}$/);
    expect(cert.issuer).to.equal(cert.subject);
    expect(cert.publicKey.asymmetricKeyDetails).to.deep.equal({ namedCurve: 'prime256v1' });
    expect(Math.round((cert.validToDate.getTime() - Date.now()) / DAY_MS)).to.equal(3650);
    expect(ca.key).to.match(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----\n?$/);
  });

  it('issues a server certificate for one year for the DNS names and addresses asked, with a random serial', async function () {
    const cert = new X509Certificate(server.cert);
    expect(cert.ca).to.equal(false);
    expect(cert.subject).to.equal('CN=localhost');
    expect(cert.subjectAltName).to.equal('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(cert.keyUsage).to.deep.equal(['1.3.6.1.5.5.7.3.1']);
    expect(cert.checkIssued(new X509Certificate(ca.cert))).to.equal(true);
    expect(cert.verify(new X509Certificate(ca.cert).publicKey)).to.equal(true);
    expect(Math.round((cert.validToDate.getTime() - Date.now()) / DAY_MS)).to.equal(365);
    const again = new X509Certificate((await issueServerCertificate(ca, { hosts: ['localhost'] })).cert);
    expect(again.serialNumber).to.match(/^[0-9A-F]{32}$/);
    expect(again.serialNumber).to.not.equal(cert.serialNumber);
  });

  it('never lets a server certificate outlive its authority', async function () {
    const shortLived = await createCertificateAuthority({ validDays: 40 });
    const cert = new X509Certificate((await issueServerCertificate(shortLived, { hosts: ['localhost'] })).cert);
    expect(cert.validToDate.getTime()).to.equal(new X509Certificate(shortLived.cert).validToDate.getTime());
  });

  it('is accepted by a TLS client that trusts only the authority, by name and by address', async function () {
    const checked: string[] = [];
    expect(await handshake(port, ca.cert, { host: '127.0.0.1', servername: 'localhost' }, checked)).to.equal('authorized');
    // No servername: the client checks the address it dialled against the certificate's IP addresses.
    expect(await handshake(port, ca.cert, { host: '127.0.0.1' }, checked)).to.equal('authorized');
    expect(checked).to.deep.equal(['localhost', '127.0.0.1']);
  });

  it('is refused by a client that trusts another authority, and for a name it was not issued for', async function () {
    expect(await handshake(port, otherCa.cert, { host: '127.0.0.1', servername: 'localhost' })).to.equal('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    expect(await handshake(port, ca.cert, { host: '127.0.0.1', servername: 'db.example.test' })).to.equal('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  it('passes `openssl verify -CAfile ca.crt server.crt` (skipped when /usr/bin/openssl is absent)', function () {
    // openssl is a second, independent reader of the chain; machines without it still run the rest.
    if (!existsSync('/usr/bin/openssl')) this.skip(); // skip reason: no openssl on this machine to read the chain a second way
    const dir = mkdtempSync(join(tmpdir(), 'dev-tls-openssl-'));
    try {
      writeFileSync(join(dir, 'ca.crt'), ca.cert);
      writeFileSync(join(dir, 'server.crt'), server.cert);
      const verify = spawnSync('/usr/bin/openssl', ['verify', '-purpose', 'sslserver', '-CAfile', 'ca.crt', 'server.crt'], { cwd: dir, encoding: 'utf8' });
      expect(verify.stdout + verify.stderr).to.equal('server.crt: OK\n');
      expect(verify.status).to.equal(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

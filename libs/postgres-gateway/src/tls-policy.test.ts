import { expect } from 'chai';
import { createCertificateAuthority, issueServerCertificate } from '@platform/dev-tls';
import { probeTls } from '@platform/testing';
import { PostgresGateway } from './gateway-server.js';

describe('PostgresGateway: the platform’s TLS policy after SSLRequest', function () {
  let gateway: PostgresGateway;
  let port: number;

  before(async function () {
    this.timeout(20_000);
    const ca = await createCertificateAuthority();
    const pair = await issueServerCertificate(ca, { hosts: ['localhost', '127.0.0.1'] });
    // Never reached: these clients stop after the handshake.
    const target = { host: '127.0.0.1', port: 1, index: 1 };
    gateway = new PostgresGateway({
      host: '127.0.0.1',
      port: 0,
      routes: { find: async () => null, findInstanceBySlot: async () => null },
      backends: [target],
      tls: pair,
      allowPlain: false,
      countQueries: false,
      handshakeTimeoutMs: 5_000,
      clientStallMs: 1_000,
      maxConnections: 10,
      mockSaltKey: Buffer.alloc(32),
      log: { info: () => {}, warn: () => {} },
    });
    port = (await gateway.listen()).port;
  });

  after(async function () {
    await gateway?.close();
  });

  it('agrees TLS 1.3, and TLS 1.2 with ECDHE and an AEAD cipher', async function () {
    this.timeout(20_000);
    const postgres = { starttls: 'postgres' } as const;
    expect(await probeTls('127.0.0.1', port, ['-tls1_3'], postgres)).to.include({ connected: true, protocol: 'TLSv1.3' });
    expect(await probeTls('127.0.0.1', port, ['-tls1_2', '-cipher', 'ECDHE-ECDSA-AES256-GCM-SHA384'], postgres)).to.deep.equal({ connected: true, protocol: 'TLSv1.2', cipher: 'ECDHE-ECDSA-AES256-GCM-SHA384' });
  });

  it('refuses CBC suites, static RSA and protocols before TLS 1.2', async function () {
    this.timeout(20_000);
    for (const args of [
      ['-tls1_2', '-cipher', 'AES256-SHA'],
      ['-tls1_2', '-cipher', 'ECDHE-ECDSA-AES128-SHA'],
      ['-tls1_1', '-cipher', 'ALL:@SECLEVEL=0'],
    ]) {
      expect(await probeTls('127.0.0.1', port, args, { starttls: 'postgres' }), args.join(' ')).to.include({ connected: false });
    }
  });
});

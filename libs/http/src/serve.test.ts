import { expect } from 'chai';
import Koa from 'koa';
import { createCertificateAuthority, issueServerCertificate } from '@platform/dev-tls';
import { probeTls } from '@platform/testing';
import { serve, type Serving } from './serve.js';

const LIMITS = { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 1_000, maxConnections: 100 };

describe('serve over https: the platform’s TLS policy', function () {
  let serving: Serving;
  let port: number;

  before(async function () {
    this.timeout(20_000);
    const ca = await createCertificateAuthority();
    const pair = await issueServerCertificate(ca, { hosts: ['localhost', '127.0.0.1'] });
    const app = new Koa();
    app.use((ctx) => (ctx.body = 'ok'));
    serving = await serve(app, { host: '127.0.0.1', port: 0, limits: LIMITS, tls: { cert: Buffer.from(pair.cert), key: Buffer.from(pair.key) } });
    port = Number(new URL(serving.url).port);
  });

  after(async function () {
    await serving?.close();
  });

  it('agrees TLS 1.3, and TLS 1.2 with ECDHE and an AEAD cipher', async function () {
    this.timeout(20_000);
    expect(await probeTls('127.0.0.1', port, ['-tls1_3'])).to.include({ connected: true, protocol: 'TLSv1.3' });
    expect(await probeTls('127.0.0.1', port, ['-tls1_2', '-cipher', 'ECDHE-ECDSA-AES128-GCM-SHA256'])).to.deep.equal({ connected: true, protocol: 'TLSv1.2', cipher: 'ECDHE-ECDSA-AES128-GCM-SHA256' });
    expect(await probeTls('127.0.0.1', port, ['-tls1_2', '-cipher', 'ECDHE-ECDSA-CHACHA20-POLY1305'])).to.include({ connected: true, cipher: 'ECDHE-ECDSA-CHACHA20-POLY1305' });
  });

  it('refuses CBC suites, static RSA and protocols before TLS 1.2', async function () {
    this.timeout(20_000);
    for (const args of [
      ['-tls1_2', '-cipher', 'AES256-SHA'],
      ['-tls1_2', '-cipher', 'ECDHE-ECDSA-AES128-SHA'],
      ['-tls1_2', '-cipher', 'ECDHE-ECDSA-AES256-SHA384'],
      ['-tls1_1', '-cipher', 'ALL:@SECLEVEL=0'],
    ]) {
      expect(await probeTls('127.0.0.1', port, args), args.join(' ')).to.include({ connected: false });
    }
  });
});

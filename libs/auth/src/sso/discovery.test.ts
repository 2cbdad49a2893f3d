import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DiscoveryError, fetchDiscovery } from './discovery.js';

/** A provider on loopback whose answers the test decides; it counts the requests it got. */
async function provider(answer: (request: http.IncomingMessage, response: http.ServerResponse, origin: string) => void) {
  let requests = 0;
  let origin = '';
  const server = http.createServer((request, response) => {
    requests++;
    answer(request, response, origin);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, requests: () => requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const documentFor = (issuer: string, overrides: Record<string, unknown> = {}) => ({
  issuer,
  authorization_endpoint: `${issuer}/auth`,
  token_endpoint: `${issuer}/token`,
  jwks_uri: `${issuer}/jwks`,
  response_types_supported: ['code'],
  subject_types_supported: ['public'],
  id_token_signing_alg_values_supported: ['RS256'],
  code_challenge_methods_supported: ['S256'],
  ...overrides,
});

async function failure(promise: Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(DiscoveryError);
    return { kind: (error as DiscoveryError).kind, message: (error as DiscoveryError).message };
  }
  throw new Error('expected a DiscoveryError');
}

describe('fetchDiscovery', function () {
  const dev = { allowLoopbackHttp: true };
  const strict = { allowLoopbackHttp: false };

  it('fetches and checks a provider’s document', async function () {
    const p = await provider((_request, response, origin) => response.end(JSON.stringify(documentFor(`${origin}/realm`))));
    try {
      const found = await fetchDiscovery(`${p.origin}/realm/.well-known/openid-configuration`, dev);
      expect(found.issuer).to.equal(`${p.origin}/realm`);
      expect(found.token_endpoint).to.equal(`${p.origin}/realm/token`);
    } finally {
      await p.close();
    }
  });

  it('refuses, before fetching anything, http, loopback (unless allowed), a name that resolves inward and credentials in the URL', async function () {
    const p = await provider((_request, response) => response.end('{}'));
    try {
      expect(await failure(fetchDiscovery(`${p.origin}/.well-known/openid-configuration`, strict))).to.deep.equal({ kind: 'refused_url', message: 'the URL must be https' });
      expect(await failure(fetchDiscovery('https://127.0.0.1/.well-known/openid-configuration', strict))).to.deep.equal({
        kind: 'refused_url',
        message: "the provider's address is on this machine or a private network",
      });
      const inward = { ...strict, lookup: async () => ['93.184.216.34', '10.0.0.7'] };
      expect(await failure(fetchDiscovery('https://sso.example.test/.well-known/openid-configuration', inward))).to.deep.equal({
        kind: 'refused_url',
        message: "the provider's address is on this machine or a private network",
      });
      expect(await failure(fetchDiscovery('https://169.254.169.254/latest/meta-data', dev))).to.deep.equal({
        kind: 'refused_url',
        message: "the provider's address is on this machine or a private network",
      });
      expect((await failure(fetchDiscovery('https://user:pw@sso.example.test/', strict))).message).to.equal('the URL must not carry credentials');
      expect((await failure(fetchDiscovery('http://sso.example.test/', { ...dev, lookup: async () => ['93.184.216.34'] }))).message).to.equal('the URL must be https');
      expect(p.requests()).to.equal(0);
    } finally {
      await p.close();
    }
  });

  it('refuses a redirect inward without following it', async function () {
    const p = await provider((_request, response) => {
      response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      response.end();
    });
    try {
      expect(await failure(fetchDiscovery(`${p.origin}/.well-known/openid-configuration`, dev))).to.deep.equal({
        kind: 'refused_url',
        message: 'the provider redirected to an address on this machine or a private network',
      });
      expect(p.requests()).to.equal(1);
    } finally {
      await p.close();
    }
  });

  it('answers a mismatch for another issuer, a missing endpoint, no code flow, no usable algorithm, no S256, not JSON, too big', async function () {
    const cases: [string, (origin: string) => string, string][] = [
      ['another issuer', () => JSON.stringify(documentFor('https://evil.example')), `the discovery document names issuer 'https://evil.example', not 'ORIGIN'`],
      ['no token endpoint', (origin) => JSON.stringify(documentFor(origin, { token_endpoint: undefined })), 'the discovery document has no https token_endpoint'],
      ['implicit only', (origin) => JSON.stringify(documentFor(origin, { response_types_supported: ['id_token'] })), 'the provider does not support the code flow'],
      ['HS256 only', (origin) => JSON.stringify(documentFor(origin, { id_token_signing_alg_values_supported: ['HS256', 'none'] })), 'the provider signs ID tokens with none of RS256, PS256, ES256, EdDSA'],
      ['plain PKCE only', (origin) => JSON.stringify(documentFor(origin, { code_challenge_methods_supported: ['plain'] })), 'the provider does not support PKCE S256'],
      ['HTML', () => '<html>hello</html>', 'the discovery document is not JSON'],
      ['a megabyte', (origin) => JSON.stringify(documentFor(origin, { padding: 'x'.repeat(1_000_000) })), 'ORIGIN answered over 100000 bytes'],
    ];
    for (const [what, body, message] of cases) {
      const p = await provider((_request, response, origin) => response.end(body(origin)));
      try {
        expect(await failure(fetchDiscovery(`${p.origin}/.well-known/openid-configuration`, dev)), what).to.deep.equal({ kind: 'mismatch', message: message.replace('ORIGIN', p.origin) });
      } finally {
        await p.close();
      }
    }
  });

  it('gives up on a provider that answers an error, or too slowly', async function () {
    const missing = await provider((_request, response) => {
      response.statusCode = 404;
      response.end();
    });
    const slow = await provider(() => undefined);
    try {
      expect(await failure(fetchDiscovery(`${missing.origin}/.well-known/openid-configuration`, dev))).to.deep.equal({ kind: 'unreachable', message: 'the discovery document answered 404' });
      const timedOut = await failure(fetchDiscovery(`${slow.origin}/.well-known/openid-configuration`, { ...dev, timeoutMs: 300 }));
      expect(timedOut).to.deep.equal({ kind: 'unreachable', message: `fetching ${slow.origin}: no answer within 300 ms` });
    } finally {
      await missing.close();
      await slow.close();
    }
  });

  it('words a failed connection without the address the name resolved to', async function () {
    const closed = { ...dev, lookup: async () => ['127.0.0.1'] };
    const refused = await failure(fetchDiscovery('http://sso.example.test:9/.well-known/openid-configuration', closed));
    expect(refused).to.deep.equal({ kind: 'unreachable', message: 'fetching http://sso.example.test:9: the connection was refused' });
  });
});

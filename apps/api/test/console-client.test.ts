import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { createTestControlPlane, startAppProcess, type AppProcess, type TestControlPlane } from '@platform/test-fixtures';
import { eventually } from '@platform/testing';
import { consoleRedirectUri, registerConsoleClient } from '../src/console.js';
import { platform, TEST_ISSUER } from './support/platform.js';

/**
 * The console's client on an API whose PUBLIC_BASE_URL is a loopback address without a port: the
 * token service's RFC 8252 rule (a loopback URI registered without a port matches any port, for
 * native apps) must not hand the console's codes to whatever listens on another local port. A
 * control plane and token service (apps/oauth) of their own, so the shared API's registration stays.
 */
describe('the console client on a loopback PUBLIC_BASE_URL without a port', function () {
  this.timeout(60_000);
  let controlPlane: TestControlPlane;
  let oauth: AppProcess;

  before(async function () {
    const p = await platform();
    controlPlane = await createTestControlPlane(p.postgres, { issuer: TEST_ISSUER, audience: 'http://127.0.0.1' });
    oauth = await startAppProcess('apps/oauth/src/main.ts', {
      portVariable: 'OAUTH_PORT',
      env: { ...controlPlane.env, OAUTH_HOST: '127.0.0.1', OAUTH_ISSUER: TEST_ISSUER, PUBLIC_BASE_URL: 'http://127.0.0.1', LOG_LEVEL: 'error', PASSWORD_HASH_LOGN: '10' },
    });
  });

  after(async function () {
    await oauth?.stop();
    await controlPlane?.close();
  });

  /** GET /oauth2/authorize for the console, redirects not followed. */
  function authorize(redirectUri: string) {
    const url = new URL('/oauth2/authorize', `http://127.0.0.1:${oauth.port}`);
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const query = { response_type: 'code', client_id: 'platform-console', redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256', state: 's' };
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return fetch(url, { redirect: 'manual' });
  }

  for (const base of ['http://127.0.0.1', 'http://localhost', 'http://[::1]']) {
    it(`${base}: the console's own URI gets the sign-in page; the same URI on any port gets the error page, nothing redirected`, async function () {
      await registerConsoleClient(controlPlane.orm, base);
      const own = consoleRedirectUri(base);
      // The token service learns of the change through the client-change notifications.
      await eventually(async () => ((await authorize(own)).status === 200 ? true : undefined), 15_000, `the sign-in page for ${own}`);
      const origin = new URL(base).origin;
      for (const elsewhere of [`${origin}:53682/console`, `${origin}:4100/console`, `${origin}:8080/console`]) {
        const refused = await authorize(elsewhere);
        const html = await refused.text();
        expect(refused.status, elsewhere).to.equal(400);
        expect(refused.headers.get('location'), elsewhere).to.equal(null);
        expect(refused.headers.get('content-type')).to.equal('text/html; charset=utf-8');
        expect(html).to.include('The redirect_uri is not one the application registered.');
      }
    });
  }

  it('writes the port into the console URI only where the any-port rule could apply', function () {
    expect(consoleRedirectUri('http://127.0.0.1')).to.equal('http://127.0.0.1:80/console');
    expect(consoleRedirectUri('http://localhost/')).to.equal('http://localhost:80/console');
    expect(consoleRedirectUri('http://[::1]/base')).to.equal('http://[::1]:80/base/console');
    expect(consoleRedirectUri('http://127.0.0.1:4100')).to.equal('http://127.0.0.1:4100/console');
    expect(consoleRedirectUri('https://localhost')).to.equal('https://localhost/console');
    expect(consoleRedirectUri('http://api.test')).to.equal('http://api.test/console');
    expect(consoleRedirectUri('http://localhost.example.com')).to.equal('http://localhost.example.com/console');
  });
});

// `npm run login`: signs a developer in through the token service with the first-party public
// client `platform-cli`, as a command-line tool does (RFC 8252): a loopback redirect on a free
// port, PKCE S256 and state, then the code exchanged for an access token and a refresh token.
// The token is a developer's: it reaches developer-only routes such as POST /workspaces.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { tokenServiceIssuer, trustRunningPlatform } from './bootstrap.js';

const TIMEOUT_MS = 5 * 60_000;
trustRunningPlatform(process.env);
const issuer = new URL(tokenServiceIssuer(process.env));
const client = await oidc.discovery(issuer, 'platform-cli', undefined, oidc.None(), {
  execute: issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
});

const verifier = oidc.randomPKCECodeVerifier();
const challenge = await oidc.calculatePKCECodeChallenge(verifier);
const state = oidc.randomState();
const server = createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
const callback = new Promise<URL>((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('no sign-in within 5 minutes')), TIMEOUT_MS);
  server.on('request', (request, response) => {
    const url = new URL(request.url ?? '/', redirectUri);
    if (url.pathname !== '/callback') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('Done. You can close this tab and go back to the terminal.\n');
    clearTimeout(timer);
    resolve(url);
  });
}).finally(() => server.close());

const authorizationUrl = oidc.buildAuthorizationUrl(client, {
  redirect_uri: redirectUri,
  code_challenge: challenge,
  code_challenge_method: 'S256',
  state,
  scope: 'api:read api:write',
});
// On stderr: stdout is only the shell lines, so that `eval "$(npm run -s login)"` sets TOKEN.
console.error(`Open this address in your browser and sign in:\n\n  ${authorizationUrl.toString()}\n`);

try {
  const returned = await callback;
  const tokens = await oidc.authorizationCodeGrant(client, returned, { pkceCodeVerifier: verifier, expectedState: state }, {
    redirect_uri: redirectUri,
  });
  console.log(`export TOKEN=${tokens.access_token}`);
  console.log(`export REFRESH_TOKEN=${tokens.refresh_token}`);
  console.log(`# valid ${Math.round((tokens.expires_in ?? 0) / 60)} minutes; scope: ${tokens.scope}`);
} catch (error) {
  console.error(`Sign-in failed: ${(error as Error).message}`);
  process.exit(1);
}

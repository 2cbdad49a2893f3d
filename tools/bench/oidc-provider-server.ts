// The reference for tools/bench/token-endpoint.ts: oidc-provider (a certified OAuth server on Koa)
// with one confidential client that may use client_credentials only (client_secret_basic), whose
// tokens are JWT access tokens (RFC 9068) signed ES256 for one resource server. Started by the
// benchmark as a process of its own; listens on 127.0.0.1 only; stops on SIGTERM.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
// @ts-expect-error -- oidc-provider 9 ships no typings; the few members used are typed below.
import OidcProvider, { errors as oidcErrors } from 'oidc-provider';

interface Provider {
  proxy: boolean;
  callback(): Parameters<typeof createServer>[1];
  on(event: 'server_error', listener: (ctx: unknown, error: Error) => void): void;
}
const ProviderClass = OidcProvider as new (issuer: string, configuration: object) => Provider;
const InvalidTarget = (oidcErrors as { InvalidTarget: new (description?: string) => Error }).InvalidTarget;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const port = Number(required('OP_PORT'));
const audience = required('OP_AUDIENCE');
const ttlSeconds = Number(required('OP_TTL_SECONDS'));
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const signingJwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-es256', alg: 'ES256', use: 'sig' };

const provider = new ProviderClass(required('OP_ISSUER'), {
  clients: [
    {
      client_id: required('OP_CLIENT_ID'),
      client_secret: required('OP_CLIENT_SECRET'),
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ],
  jwks: { keys: [signingJwk] },
  // Only an ES256 key exists; without this the provider would look for an RS256 one.
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  routes: { token: '/oauth2/token' },
  ttl: { ClientCredentials: ttlSeconds },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // Requests without `resource` get the one resource server, as with our service's audience.
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx: unknown, resource: string) => {
        if (resource !== audience) throw new InvalidTarget('unknown resource');
        return { scope: '', audience, accessTokenFormat: 'jwt', accessTokenTTL: ttlSeconds, jwt: { sign: { alg: 'ES256' } } };
      },
    },
  },
});
provider.proxy = false;
provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error:', error));

const server = createServer(provider.callback()).listen(port, '127.0.0.1');
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

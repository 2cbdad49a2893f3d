// What `npm start` prints once the platform is up: where everything listens, a first token, and
// how to take the first steps (a database, a credential, psql through the gateway).
import type { PlatformConfig } from '@platform/config';
import { DEFAULT_WORKSPACE } from './bootstrap.js';
import type { LocalCredentials } from './local-state.js';

export interface BannerFacts {
  config: PlatformConfig;
  /** Where the control plane's PostgreSQL is. */
  where: string;
  token: { access_token: string; expires_in: number };
  credentials: LocalCredentials;
  credentialsPath: string;
  gateway: { adminUrl: string; caCert: string | null; madeAuthority: boolean };
  /** The CA of the apps' https certificate (PLATFORM_HTTPS), to tell clients how to trust it. */
  httpsCaCert?: string | null;
}

export function banner({ config, where, token, credentials, credentialsPath, gateway, httpsCaCert }: BannerFacts): string {
  const { client, developer } = credentials;
  const base = config.api.publicBaseUrl;
  const database = 'app';
  const address = `postgres://<id>:<password>@${new URL(config.gateway.publicUrl).host}/${database}`;
  const tls = gateway.caCert
    ? `  psql "${address}?sslmode=verify-full&sslrootcert=${gateway.caCert}"

sslmode=require works without the CA file too (encrypted, but psql does not check the server).
The gateway's certificate comes from a development CA ${gateway.madeAuthority ? 'made by this start' : 'kept'} in ${gateway.caCert.replace(/\/ca\.crt$/, '')}; never trust it beyond this machine.`
    : `  psql "${address}?sslmode=verify-full&sslrootcert=<the CA of your GATEWAY_TLS_CERT>"

sslmode=require works without the CA file too (encrypted, but psql does not check the server).`;
  const trust = httpsCaCert
    ? `
Both apps serve https with a certificate from the development CA ${httpsCaCert}. Trust it:
  curl --cacert ${httpsCaCert} ...        export NODE_EXTRA_CA_CERTS=${httpsCaCert}   (Node: the MCP server, scripts)
`
    : '';
  return `
The platform is up.
  API ({base_url}, {api_url}) ${base}   OpenAPI: ${base}/openapi.json
  Token service               ${config.oauth.issuer}   Metadata: ${config.oauth.issuer}/.well-known/oauth-authorization-server
  PostgreSQL gateway          ${config.gateway.publicUrl}   Admin: ${gateway.adminUrl}/healthz, /readyz, /metrics
  Control plane               ${where}
${trust}
A first token, from the token service's client_credentials grant for workspace '${DEFAULT_WORKSPACE.slug}'
(client ${client.client_id}; valid ${Math.round(token.expires_in / 60)} minutes; \`npm run token\` prints a fresh one):

  export TOKEN=${token.access_token}
  curl -s -H "Authorization: Bearer $TOKEN" ${base}/workspaces
  curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
    -d '{"databaseName":"${database}","region":"${config.regions[0]}"}' ${base}/workspaces/${DEFAULT_WORKSPACE.slug}/databases

It is the workspace client's token: it works inside workspace '${DEFAULT_WORKSPACE.slug}'. Developer-only routes,
such as POST /workspaces or registering clients, answer it 403 developer_token_required: for those,
sign in as a developer with \`npm run login\` (authorization code + PKCE in your browser), which prints
a developer's token.
  ${developer.email} / ${developer.password}   or create an account on the sign-in page.

Connect with psql: once the database is READY, create a credential (its id and password are shown once),
then connect through the gateway with them:
  curl -s -X POST -H "Authorization: Bearer $TOKEN" ${base}/workspaces/${DEFAULT_WORKSPACE.slug}/databases/${database}/credentials
${tls}

The same client token by hand:  curl -s -u '${client.client_id}:<secret>' -d grant_type=client_credentials ${config.oauth.issuer}/oauth2/token
The client's secret and this password are in ${credentialsPath} (new secret at every start).
\`npm run token\`, \`npm run login\` and \`npm run keys:rotate\` find this platform by itself, on these ports.

Ctrl-C stops everything.
`;
}

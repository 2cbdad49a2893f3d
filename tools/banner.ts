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
  /** Names of the default workspace's live databases (a start on existing data has some). */
  existingDatabases?: readonly string[];
  /** The major version of the PostgreSQL server databases are created on. */
  serverMajor: number;
  /** The development mail catcher, when SMTP_URL is unset: where it listens and the folder it writes. */
  mailCatcher?: { url: string; dir: string } | null;
}

/** `app`, or the first of `app_2`, `app_3`... that no database of the workspace has. */
export function freshDatabaseName(existing: readonly string[], base = 'app'): string {
  const taken = new Set(existing);
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}_${n}`)) return `${base}_${n}`;
}

/** A path as one shell word, quoted only when it needs to be. */
function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

export function banner({ config, where, token, credentials, credentialsPath, gateway, httpsCaCert, existingDatabases = [], serverMajor, mailCatcher }: BannerFacts): string {
  const { client, developer } = credentials;
  const base = config.api.publicBaseUrl;
  // Under PLATFORM_HTTPS every command carries the CA, so each one works as printed.
  const curl = httpsCaCert ? `curl -s --cacert ${shellWord(httpsCaCert)}` : 'curl -s';
  // A start on existing data must not print a create that answers 409 database_name_taken.
  const database = freshDatabaseName(existingDatabases);
  const shown = existingDatabases.slice(0, 5).join(', ') + (existingDatabases.length > 5 ? ` and ${existingDatabases.length - 5} more` : '');
  const existing =
    existingDatabases.length > 0
      ? `
Workspace '${DEFAULT_WORKSPACE.slug}' has databases from an earlier start (${shown}): list them, and create
another under a name not taken yet:
`
      : '';
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
  const psqlVersion = `Use psql ${serverMajor} or newer (\`psql --version\`): the server is PostgreSQL ${serverMajor}, and an older psql cannot run
\\l and other catalog commands correctly on it (psql 15, Debian 12's own, stops on a column PostgreSQL 17 renamed;
apt.postgresql.org has postgresql-client-${serverMajor} for Debian and Ubuntu).`;
  return `
The platform is up.
  API ({base_url}, {api_url}) ${base}   OpenAPI: ${base}/openapi.json
  API reference (try it out)  ${base}/docs   The token service's: ${config.oauth.issuer}/docs
  Web console                 ${base}/console   Sign in as the developer below
  Token service               ${config.oauth.issuer}   Metadata: ${config.oauth.issuer}/.well-known/oauth-authorization-server
  PostgreSQL gateway          ${config.gateway.publicUrl}   Admin: ${gateway.adminUrl}/healthz, /readyz, /metrics
${config.gateway.pooledPublicUrl ? `  Pooled endpoint             ${config.gateway.pooledPublicUrl}   Transaction pooling: a credential's pooledConnectionUrl\n` : ''}  Control plane               ${where}
${mailCatcher ? `  Mail (development catcher)  ${mailCatcher.url}   \`npm run mail\` prints the latest (${mailCatcher.dir})\n` : ''}${trust}
A first token, from the token service's client_credentials grant for workspace '${DEFAULT_WORKSPACE.slug}'
(client ${client.client_id}; valid ${Math.round(token.expires_in / 60)} minutes; \`npm run token\` prints a fresh one):

  export TOKEN=${token.access_token}
  ${curl} -H "Authorization: Bearer $TOKEN" ${base}/workspaces
${existing}  ${curl} -H "Authorization: Bearer $TOKEN" ${base}/workspaces/${DEFAULT_WORKSPACE.slug}/databases
  ${curl} -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
    -d '{"databaseName":"${database}","region":"${config.regions[0]}"}' ${base}/workspaces/${DEFAULT_WORKSPACE.slug}/databases

It is the workspace client's token: it works inside workspace '${DEFAULT_WORKSPACE.slug}'. Developer-only routes,
such as POST /workspaces or registering clients, answer it 403 developer_token_required: for those,
sign in as a developer with \`npm run login\` (authorization code + PKCE in your browser), which prints
a developer's token.
  ${developer.email} / ${developer.password}   or create an account on the sign-in page.

Connect with psql: once the database is READY, create a credential (its id and password are shown once),
then connect through the gateway with them:
  ${curl} -X POST -H "Authorization: Bearer $TOKEN" ${base}/workspaces/${DEFAULT_WORKSPACE.slug}/databases/${database}/credentials
${tls}

${psqlVersion}

The same client token by hand:  ${curl} -u '${client.client_id}:<secret>' -d grant_type=client_credentials ${config.oauth.issuer}/oauth2/token
The client's secret and this password are in ${credentialsPath} (new secret at every start).
\`npm run token\`, \`npm run login\` and \`npm run keys:rotate\` find this platform by itself, on these ports.

Ctrl-C stops everything.
`;
}

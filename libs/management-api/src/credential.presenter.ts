import { DATABASE_NAME_MAX_LENGTH, DATABASE_STATUSES, REGIONS, ROLE_NAME_MAX_LENGTH, regionId, type Credential, type Database } from '@platform/domain';
import { dateTime, int, nullable, oneOf, record, text, uuid } from '@platform/http';
import { databaseUrl, type DatabaseHosts } from './database.presenter.js';
import { WorkspaceSchema, presentWorkspace } from './workspace.presenter.js';

const CredentialDatabaseSchema = record(
  {
    id: uuid(),
    name: text({ min: 1, max: DATABASE_NAME_MAX_LENGTH }),
    workspace: WorkspaceSchema,
    status: oneOf(DATABASE_STATUSES),
    regionId: int(`The region's position in ${REGIONS.join(', ')}, counted from 1`),
    created: dateTime(),
    region: oneOf(REGIONS),
  },
  'The database the credential logs in to',
);

const credentialFields = {
  id: text({ min: 1, max: ROLE_NAME_MAX_LENGTH, description: 'The credential’s PostgreSQL role, its user name when connecting' }),
  database: CredentialDatabaseSchema,
  tenantId: nullable(uuid('The tenant whose rows alone the credential sees; null when it sees every tenant')),
};

export const CredentialSchema = record({ ...credentialFields, created: dateTime() }, 'A credential (never its password)');

export const NewCredentialSchema = record(
  {
    ...credentialFields,
    password: text({ min: 1, max: 256, description: 'Shown in this response only' }),
    connectionUrl: text({
      max: 2048,
      description: 'The database’s dbHost with the credential’s user name and password, and sslmode=require (the gateway accepts TLS only)',
    }),
    pooledConnectionUrl: nullable(
      text({
        max: 2048,
        description:
          'The same login through the gateway’s pooled endpoint (transaction pooling: many short-lived clients share a few server sessions; ' +
          'session-only features such as LISTEN do not work there); null when the platform runs no pooled endpoint',
      }),
    ),
  },
  'A new credential with its password',
);

function presentCredentialDatabase(database: Database) {
  return {
    id: database.id,
    name: database.name,
    workspace: presentWorkspace(database.workspace),
    status: database.status,
    regionId: regionId(database.region),
    created: database.created.toISOString(),
    region: database.region,
  };
}

export function presentCredential(credential: Credential, database: Database) {
  return {
    id: credential.id,
    database: presentCredentialDatabase(database),
    tenantId: credential.tenantId,
    created: credential.created.toISOString(),
  };
}

/** The credential with its password, and a URL that logs in with both. */
export function presentNewCredential(credential: Credential, password: string, database: Database, hosts: Pick<DatabaseHosts, 'gatewayUrl'> & { pooledGatewayUrl?: string | null }) {
  const loginUrl = (gatewayUrl: string) => {
    const url = new URL(databaseUrl(database, { gatewayUrl }));
    url.username = credential.id;
    url.password = password;
    url.searchParams.set('sslmode', 'require');
    return url.href;
  };
  return {
    id: credential.id,
    password,
    database: presentCredentialDatabase(database),
    tenantId: credential.tenantId,
    connectionUrl: loginUrl(hosts.gatewayUrl),
    pooledConnectionUrl: hosts.pooledGatewayUrl ? loginUrl(hosts.pooledGatewayUrl) : null,
  };
}

import { DATABASE_STATUSES, REGIONS, WORKSPACE_ROLES, type ClusterDirectory, type Database, type Workspace, type WorkspaceMember } from '@platform/domain';
import { bool, dateTime, nullable, oneOf, record, text, uuid } from '@platform/http';

export const WorkspaceSchema = record(
  {
    id: uuid(),
    name: text({ max: 100 }),
    slug: text({ max: 48 }),
    billing_customer_id: nullable(text({ max: 255, description: 'The workspace in the billing system; null while none is attached' })),
    created: dateTime(),
  },
  'A workspace',
);

const databaseFields = {
  id: uuid(),
  name: text({ min: 1, max: 63 }),
  workspace: WorkspaceSchema,
  status: oneOf(DATABASE_STATUSES, 'REQUESTED -> BUILT -> READY; PENDING and POOLED are reserved'),
  region: oneOf(REGIONS),
  expandable: bool('Whether the database can move to dedicated compute; false until compute instances exist'),
  apiHost: text({ max: 2048, description: 'The {api_url} serving this database’s tenants and users' }),
  dbHost: text({ max: 2048, description: 'A postgres:// URL (without credentials) that reaches the database' }),
  created: dateTime(),
  sharded: bool('Always false until a distributed engine serves sharded databases'),
};

export const DatabaseSchema = record(databaseFields, 'A database');

export const RenamedDatabaseSchema = record(
  {
    ...databaseFields,
    parent: record({ id: uuid(), name: text({ max: 63 }) }, 'The database as it was before this rename'),
  },
  'A renamed database',
);

export function presentWorkspace(workspace: Workspace) {
  return {
    id: workspace.id,
    name: workspace.name,
    slug: workspace.slug,
    billing_customer_id: workspace.billingCustomerId,
    created: workspace.created.toISOString(),
  };
}

export function presentDatabase(database: Database, clusters: ClusterDirectory, publicApiUrl: string) {
  return {
    id: database.id,
    name: database.name,
    workspace: presentWorkspace(database.workspace),
    status: database.status,
    region: database.region,
    expandable: false,
    apiHost: publicApiUrl,
    dbHost: clusters.forRegion(database.region).connectionUrl(database.physicalName),
    created: database.created.toISOString(),
    sharded: false,
  };
}

export const WorkspaceMemberSchema = record(
  {
    developerId: uuid('The developer’s id'),
    email: text({ max: 320 }),
    name: nullable(text({ max: 255 })),
    role: oneOf(WORKSPACE_ROLES, 'owner: manages the members; member: uses the workspace'),
    added: dateTime('When the developer joined the workspace'),
  },
  'A developer who belongs to the workspace',
);

export function presentMember(member: WorkspaceMember) {
  return {
    developerId: member.developerId,
    email: member.email,
    name: member.name,
    role: member.role,
    added: member.added.toISOString(),
  };
}

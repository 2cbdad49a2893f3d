import type { DatabaseStatus } from './database-status.js';
import type { Region } from './regions.js';

export interface Developer {
  id: string;
  email: string;
  name: string | null;
  created: Date;
}

export interface Workspace {
  id: string;
  name: string;
  slug: string;
  /** The workspace's id in a billing system; null while no billing system is attached. */
  billingCustomerId: string | null;
  created: Date;
}

export interface Database {
  id: string;
  workspace: Workspace;
  name: string;
  region: Region;
  status: DatabaseStatus;
  /** The database's name on its PostgreSQL cluster; fixed at creation, so renames are metadata only. */
  physicalName: string;
  created: Date;
  updated: Date;
  deleted: Date | null;
}

/** Who is calling. Developer tokens see the workspaces their developer belongs to. */
export interface DeveloperPrincipal {
  kind: 'developer';
  developerId: string;
  scopes: readonly string[];
}

export type Principal = DeveloperPrincipal;

/** The physical database name for a platform database id: stable, unique, never user-chosen. */
export function physicalDatabaseName(databaseId: string): string {
  return `db_${databaseId.replace(/-/g, '')}`;
}

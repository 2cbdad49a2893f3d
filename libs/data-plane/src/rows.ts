import type { Tenant, User } from '@platform/domain';

export const TENANT_COLUMNS = 't.id, t.name, t.created, t.updated';
export const USER_COLUMNS =
  'u.id, u.email, u.name, u.given_name, u.family_name, u.picture, u.email_verified, u.created, u.updated';

export interface TenantRow {
  id: string;
  name: string | null;
  created: Date;
  updated: Date;
}

export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  given_name: string | null;
  family_name: string | null;
  picture: string | null;
  email_verified: Date | null;
  created: Date;
  updated: Date;
}

export function toTenant(row: TenantRow): Tenant {
  return { id: row.id, name: row.name, created: row.created, updated: row.updated };
}

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    givenName: row.given_name,
    familyName: row.family_name,
    picture: row.picture,
    emailVerified: row.email_verified,
    created: row.created,
    updated: row.updated,
  };
}

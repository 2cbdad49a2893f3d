import { TENANT_NAME_MAX_LENGTH, type Tenant } from '@platform/domain';
import { dateTime, nullable, record, text, uuid } from '@platform/http';

export const TenantSchema = record(
  { id: uuid(), name: nullable(text({ max: TENANT_NAME_MAX_LENGTH })), created: dateTime(), updated: dateTime() },
  'A tenant of the database',
);

export function presentTenant(tenant: Tenant) {
  return { id: tenant.id, name: tenant.name, created: tenant.created.toISOString(), updated: tenant.updated.toISOString() };
}

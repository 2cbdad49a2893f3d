import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { DatabaseEntity } from './database.entity.js';

export const CredentialEntity = defineEntity({
  name: 'Credential',
  tableName: 'credentials',
  properties: {
    /** The login role's name on the database's cluster. */
    id: p.string().primary(),
    database: () => p.manyToOne(DatabaseEntity).deleteRule('cascade'),
    tenantId: p.uuid().nullable(),
    internal: p.boolean().default(false),
    created: p.datetime().onCreate(() => new Date()),
    deleted: p.datetime().nullable(),
  },
});
export type CredentialRow = InferEntity<typeof CredentialEntity>;

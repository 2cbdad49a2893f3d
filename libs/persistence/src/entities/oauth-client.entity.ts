import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { DeveloperEntity } from './developer.entity.js';
import { WorkspaceEntity } from './workspace.entity.js';

export const OAuthClientEntity = defineEntity({
  name: 'OAuthClient',
  tableName: 'oauth_clients',
  properties: {
    id: p.string().primary(),
    workspace: () => p.manyToOne(WorkspaceEntity).nullable().deleteRule('cascade'),
    name: p.string(),
    type: p.enum(['confidential', 'public'] as const),
    secretDigest: p.string().nullable().hidden().lazy(),
    redirectUris: p.json<string[]>(),
    createdBy: () => p.manyToOne(DeveloperEntity).fieldName('created_by').nullable().deleteRule('set null'),
    created: p.datetime().onCreate(() => new Date()),
    secretRotated: p.datetime().nullable(),
    deleted: p.datetime().nullable(),
  },
});
export type OAuthClientRow = InferEntity<typeof OAuthClientEntity>;

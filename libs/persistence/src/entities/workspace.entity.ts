import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { DeveloperEntity } from './developer.entity.js';

export const WorkspaceEntity = defineEntity({
  name: 'Workspace',
  tableName: 'workspaces',
  properties: {
    id: p.uuid().primary(),
    name: p.string(),
    slug: p.string().unique(),
    billingCustomerId: p.string().nullable(),
    created: p.datetime().onCreate(() => new Date()),
  },
});
export type WorkspaceRow = InferEntity<typeof WorkspaceEntity>;

export const WorkspaceMemberEntity = defineEntity({
  name: 'WorkspaceMember',
  tableName: 'workspace_members',
  properties: {
    workspace: () => p.manyToOne(WorkspaceEntity).primary().deleteRule('cascade'),
    developer: () => p.manyToOne(DeveloperEntity).primary().deleteRule('cascade'),
    role: p.string(),
    created: p.datetime().onCreate(() => new Date()),
  },
});
export type WorkspaceMemberRow = InferEntity<typeof WorkspaceMemberEntity>;

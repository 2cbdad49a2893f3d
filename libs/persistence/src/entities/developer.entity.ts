import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const DeveloperEntity = defineEntity({
  name: 'Developer',
  tableName: 'developers',
  properties: {
    id: p.uuid().primary(),
    email: p.string().length(320),
    name: p.string().nullable(),
    created: p.datetime().onCreate(() => new Date()),
  },
});
export type DeveloperRow = InferEntity<typeof DeveloperEntity>;

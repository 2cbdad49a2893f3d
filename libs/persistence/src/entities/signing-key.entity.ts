import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const SigningKeyEntity = defineEntity({
  name: 'SigningKey',
  tableName: 'signing_keys',
  properties: {
    kid: p.string().primary(),
    alg: p.string(),
    publicJwk: p.json<Record<string, unknown>>(),
    privateJwk: p.json<Record<string, unknown>>().hidden().lazy(),
    created: p.datetime().onCreate(() => new Date()),
    /** After this time the key no longer signs; it keeps verifying until `expires`. */
    retires: p.datetime().nullable(),
    expires: p.datetime().nullable(),
  },
});
export type SigningKeyRow = InferEntity<typeof SigningKeyEntity>;

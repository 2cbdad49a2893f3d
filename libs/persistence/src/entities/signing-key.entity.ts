import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const SigningKeyEntity = defineEntity({
  name: 'SigningKey',
  tableName: 'signing_keys',
  properties: {
    kid: p.string().primary(),
    alg: p.string(),
    publicJwk: p.json<Record<string, unknown>>(),
    /** The private half in plain text: only in rows a release from before sealing wrote, until a replica seals them. */
    privateJwk: p.json<Record<string, unknown>>().nullable().hidden().lazy(),
    /** The private half sealed under SIGNING_KEY_SECRET_KEYS with the kid as context; opened by auth's KeySet only. */
    sealedPrivateJwk: p.text().nullable().hidden().lazy(),
    created: p.datetime().onCreate(() => new Date()),
    /** After this time the key no longer signs; it keeps verifying until `expires`. */
    retires: p.datetime().nullable(),
    expires: p.datetime().nullable(),
  },
});
export type SigningKeyRow = InferEntity<typeof SigningKeyEntity>;

import { randomBytes } from 'node:crypto';
import { issueDeveloperToken, KeySet, parseKeyRing, SecretBox } from '@platform/auth';
import { API_SCOPES, systemClock, type Clock } from '@platform/domain';
import { MikroSigningKeyRepository, migrateControlPlane, openOrm, openRepositories, type MikroORM } from '@platform/persistence';
import { createScratchDatabase, dropScratchDatabase, type TestPostgres } from '@platform/testing';

export interface TestControlPlane {
  url: string;
  orm: MikroORM;
  keys: KeySet;
  /** The ring its signing keys are sealed with, as SIGNING_KEY_SECRET_KEYS carries it (`id:base64key`). */
  signingKeySecretKeys: string;
  /** What every app on this control plane needs: DATABASE_URL, and SIGNING_KEY_SECRET_KEYS for those that sign. */
  env: { DATABASE_URL: string; SIGNING_KEY_SECRET_KEYS: string };
  /** A new developer with a token that the API under test accepts. */
  newDeveloper(options?: { ttlSeconds?: number; clock?: Clock; scopes?: readonly string[] }): Promise<{ id: string; email: string; token: string }>;
  close(): Promise<void>;
}

/** A migrated control plane in a database of its own, so tests never share state by accident. */
export async function createTestControlPlane(
  server: TestPostgres,
  tokens: { issuer: string; audience: string },
): Promise<TestControlPlane> {
  const database = await createScratchDatabase(server, 'cp');
  const orm = await openOrm({ databaseUrl: database.url, poolSize: 4 });
  await migrateControlPlane(orm);
  // A ring of its own per control plane: the apps started on it must be handed this one.
  const signingKeySecretKeys = `test1:${randomBytes(32).toString('base64')}`;
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock, sealer: new SecretBox(parseKeyRing(signingKeySecretKeys)) });
  await keys.ensureSigningKey();
  return {
    url: database.url,
    orm,
    keys,
    signingKeySecretKeys,
    env: { DATABASE_URL: database.url, SIGNING_KEY_SECRET_KEYS: signingKeySecretKeys },
    async newDeveloper(options = {}) {
      const email = `dev-${randomBytes(6).toString('hex')}@example.test`;
      const developer = await openRepositories(orm).developers.ensure({ email, name: null });
      const issued = await issueDeveloperToken(
        keys,
        { ...tokens, clock: options.clock ?? systemClock },
        { developerId: developer.id, clientId: 'tests', scopes: options.scopes ?? API_SCOPES, ttlSeconds: options.ttlSeconds ?? 600 },
      );
      return { id: developer.id, email, token: issued.token };
    },
    async close() {
      await orm.close();
      await dropScratchDatabase(server, database.name);
    },
  };
}

import { randomBytes } from 'node:crypto';
import { issueDeveloperToken, KeySet } from '@platform/auth';
import { API_SCOPES, systemClock, type Clock } from '@platform/domain';
import { MikroSigningKeyRepository, migrateControlPlane, openOrm, openRepositories, type MikroORM } from '@platform/persistence';
import { createScratchDatabase, dropScratchDatabase, type TestPostgres } from '@platform/testing';

export interface TestControlPlane {
  url: string;
  orm: MikroORM;
  keys: KeySet;
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
  const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock });
  await keys.ensureSigningKey();
  return {
    url: database.url,
    orm,
    keys,
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

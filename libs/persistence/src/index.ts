export { openOrm, createOrmConfig, migrateControlPlane, MikroORM, type OrmOptions } from './orm.js';
export { openRepositories, pingControlPlane } from './request-scope.js';
export { MikroProvisioningStore } from './repositories/provisioning.store.js';
export { MikroSigningKeyRepository } from './repositories/signing-key.repository.js';
export { startEmbeddedPostgres, type EmbeddedPostgresHandle, type EmbeddedPostgresOptions } from './embedded-postgres.js';
export { DataPlanePools, type DataPlanePoolOptions } from './data-plane/pools.js';
export { PgDataPlane, sessionIdOf } from './data-plane/repositories.js';
export { CachedDatabaseLocator } from './data-plane/locator.js';
export { MikroGrantStore, PolledRevocationList } from './repositories/grant.store.js';

export { openOrm, createOrmConfig, migrateControlPlane, MikroORM, type OrmOptions } from './orm.js';
export { openRepositories, pingControlPlane } from './request-scope.js';
export { MikroProvisioningStore } from './repositories/provisioning.store.js';
export { MikroSigningKeyRepository } from './repositories/signing-key.repository.js';
export { startEmbeddedPostgres, type EmbeddedPostgresHandle, type EmbeddedPostgresOptions } from './embedded-postgres.js';

export { openOrm, createOrmConfig, migrateControlPlane, MikroORM, type OrmOptions } from './orm.js';
export { openRepositories, pingControlPlane } from './request-scope.js';
export { MikroProvisioningStore } from './repositories/provisioning.store.js';
export { MikroSigningKeyRepository } from './repositories/signing-key.repository.js';
export { CachedDatabaseLocator } from './repositories/database-locator.js';
export { MikroGrantStore, PolledRevocationList } from './repositories/grant.store.js';
export { ClientChangeListener, CLIENT_CHANGED_CHANNEL } from './repositories/client-changes.js';
export { CachedClientLookup, type CachedClientLookupOptions, type ClientForAuthentication } from './repositories/cached-client-lookup.js';

export { openOrm, migrateControlPlane, MikroORM, type OrmOptions } from './orm.js';
export { openRepositories, pingControlPlane } from './request-scope.js';
export { MikroProvisioningStore } from './repositories/provisioning.store.js';
export { MikroSigningKeyRepository } from './repositories/signing-key.repository.js';
export { CachedDatabaseLocator } from './repositories/database-locator.js';
export { SqlGrantStore } from './repositories/grant.store.js';
export { PolledRevocationList } from './repositories/polled-revocation-list.js';
export { ClientChangeListener } from './repositories/client-change-listener.js';
export { CachedClientLookup, type CachedClientLookupOptions, type ClientForAuthentication } from './repositories/cached-client-lookup.js';

import type { DataPlane, DataPlaneRepositories, Database } from '@platform/domain';
import type { DataPlanePools } from './pools.js';
import { queryableOf } from './queryable.js';
import { PgSessionRepository } from './session.repository.js';
import { PgTenantRepository } from './tenant.repository.js';
import { PgUserRepository } from './user.repository.js';

/** The built-in tables of each platform database, over a bounded pool per database. */
export class PgDataPlane implements DataPlane {
  constructor(
    private readonly pools: DataPlanePools,
    /** A URL (with credentials that may use the built-in tables) for a platform database. */
    private readonly urlFor: (database: Database) => string,
  ) {}

  open(database: Database): DataPlaneRepositories {
    const url = this.urlFor(database);
    const pool = queryableOf(() => this.pools.pool(url));
    return {
      tenants: new PgTenantRepository(pool),
      users: new PgUserRepository(pool),
      sessions: new PgSessionRepository(pool),
    };
  }
}

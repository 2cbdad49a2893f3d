import type { DataPlane, DataPlaneRepositories, Database } from '@platform/domain';
import type { ConnectionBudget } from './connection-budget.js';
import { queryableOf } from './queryable.js';
import { PgSessionRepository } from './session.repository.js';
import { PgTenantRepository } from './tenant.repository.js';
import { PgUserRepository } from './user.repository.js';

/** The built-in tables of each platform database, over the cluster's connection budget. */
export class PgDataPlane implements DataPlane {
  private readonly repairs = new Map<string, Promise<void>>();

  constructor(
    private readonly connections: ConnectionBudget,
    /** A URL (with credentials that may use the built-in tables) for a platform database. */
    private readonly urlFor: (database: Database) => string,
    /**
     * Called when the URL's login is refused, before one more try: brings a database built before
     * its service role existed up to date. Concurrent refusals of one database share one call.
     */
    private readonly repairLogin?: (database: Database) => Promise<void>,
  ) {}

  open(database: Database): DataPlaneRepositories {
    const url = this.urlFor(database);
    const pool = queryableOf(this.connections.queryable(url), this.repairLogin ? () => this.repair(database) : undefined);
    return {
      tenants: new PgTenantRepository(pool),
      users: new PgUserRepository(pool),
      sessions: new PgSessionRepository(pool),
    };
  }

  private repair(database: Database): Promise<void> {
    let running = this.repairs.get(database.physicalName);
    if (!running) {
      running = this.repairLogin!(database).finally(() => this.repairs.delete(database.physicalName));
      this.repairs.set(database.physicalName, running);
    }
    return running;
  }
}

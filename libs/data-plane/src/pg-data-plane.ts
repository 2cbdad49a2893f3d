import type { AccountTokenPlane, AccountTokenRepositories, DataPlane, DataPlaneRepositories, Database } from '@platform/domain';
import type { ConnectionBudget } from './connection-budget.js';
import { PgAccountSecrets, PgOneTimeTokenStore } from './one-time-token.repository.js';
import { queryableOf, type Queryable } from './queryable.js';
import { PgSessionRepository } from './session.repository.js';
import { PgTenantRepository } from './tenant.repository.js';
import { PgUserRepository } from './user.repository.js';

/** The built-in tables of each platform database, over the cluster's connection budget. */
export class PgDataPlane implements DataPlane, AccountTokenPlane {
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
    const pool = this.poolOf(database);
    return {
      tenants: new PgTenantRepository(pool),
      users: new PgUserRepository(pool),
      sessions: new PgSessionRepository(pool),
    };
  }

  /** The one-time tokens of password reset, email verification and invites, and what they change. */
  openAccountTokens(database: Database): AccountTokenRepositories {
    const pool = this.poolOf(database);
    return { tokens: new PgOneTimeTokenStore(pool), secrets: new PgAccountSecrets(pool) };
  }

  private poolOf(database: Database): Queryable {
    return queryableOf(this.connections.queryable(this.urlFor(database)), this.repairLogin ? () => this.repair(database) : undefined);
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

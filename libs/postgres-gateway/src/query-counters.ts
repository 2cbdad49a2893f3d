// Queries counted and timed per database and tenant. A connection keeps a reference to its own
// cell, so counting one query is three additions; nothing is sampled, so the counts are exact.

export interface QueryCell {
  readonly databaseId: string;
  /** The tenant the connection was bound to at startup; null when none. */
  readonly tenantId: string | null;
  queries: number;
  errors: number;
  /** Summed from when the query's message arrived to when its completion left the backend. */
  totalMs: number;
}

export class QueryCounters {
  private readonly cells = new Map<string, QueryCell>();

  cell(databaseId: string, tenantId: string | null): QueryCell {
    const key = `${databaseId}/${tenantId ?? ''}`;
    let cell = this.cells.get(key);
    if (!cell) {
      cell = { databaseId, tenantId, queries: 0, errors: 0, totalMs: 0 };
      this.cells.set(key, cell);
    }
    return cell;
  }

  snapshot(): QueryCell[] {
    return [...this.cells.values()].map((cell) => ({ ...cell }));
  }
}

const CLIENT_QUERY = 0x51; // 'Q'
const CLIENT_EXECUTE = 0x45; // 'E'
const CLIENT_FUNCTION_CALL = 0x46; // 'F'
const CLIENT_SYNC = 0x53; // 'S'
const SERVER_COMMAND_COMPLETE = 0x43; // 'C'
const SERVER_EMPTY_QUERY = 0x49; // 'I'
const SERVER_PORTAL_SUSPENDED = 0x73; // 's'
const SERVER_ERROR = 0x45; // 'E'
const SERVER_READY = 0x5a; // 'Z'

/** What the client asked for and the backend has not answered yet, oldest first. */
const Pending = {
  /** A simple query or a function call: it ends at ReadyForQuery. */
  Simple: 0,
  /** An Execute of the extended protocol: it ends at its CommandComplete, PortalSuspended or error. */
  Execute: 1,
  /** A Sync: its ReadyForQuery ends whatever the backend skipped after an error. */
  Sync: 2,
} as const;
type Pending = (typeof Pending)[keyof typeof Pending];

/**
 * Follows one connection's messages both ways and adds each query to its cell when it ends. A simple
 * query counts once however many statements it holds; each Execute counts once; an Execute the
 * backend skipped (an earlier message of the pipeline failed) does not count.
 */
export class QueryTracker {
  private readonly kinds: Pending[] = [];
  private readonly started: number[] = [];
  private failed = false;
  /** The backend's transaction status from its last ReadyForQuery: I, T or E. */
  transactionStatus = 0x49;

  constructor(private readonly cell: QueryCell) {}

  fromClient = (type: number): void => {
    if (type === CLIENT_QUERY || type === CLIENT_FUNCTION_CALL) this.push(Pending.Simple);
    else if (type === CLIENT_EXECUTE) this.push(Pending.Execute);
    else if (type === CLIENT_SYNC) this.push(Pending.Sync);
  };

  fromServer = (type: number, status: number): void => {
    switch (type) {
      case SERVER_COMMAND_COMPLETE:
      case SERVER_EMPTY_QUERY:
      case SERVER_PORTAL_SUSPENDED:
        if (this.kinds[0] === Pending.Execute) this.finish(false);
        break;
      case SERVER_ERROR:
        if (this.kinds[0] === Pending.Execute) {
          this.finish(true);
        } else if (this.kinds[0] === Pending.Simple && !this.failed) {
          // Counted now, not at ReadyForQuery: PostgreSQL flushes an error on its own, and a client
          // that hangs up on reading it would otherwise take the ReadyForQuery behind it uncounted.
          this.record(this.started[0], true);
          this.failed = true;
        }
        break;
      case SERVER_READY:
        this.transactionStatus = status;
        // Executes still waiting were skipped after an error: they never ran.
        while (this.kinds[0] === Pending.Execute) this.drop();
        if (this.kinds[0] === Pending.Simple) {
          if (this.failed) this.drop();
          else this.finish(false);
        } else if (this.kinds[0] === Pending.Sync) {
          this.drop();
        }
        this.failed = false;
        break;
    }
  };

  /** Queries asked for and not answered: what a connection that ends now leaves uncounted. */
  get pending(): number {
    return this.kinds.length;
  }

  private push(kind: Pending): void {
    this.kinds.push(kind);
    this.started.push(performance.now());
  }

  private finish(error: boolean): void {
    const started = this.started.shift()!;
    this.kinds.shift();
    this.record(started, error);
  }

  private record(started: number, error: boolean): void {
    this.cell.queries += 1;
    if (error) this.cell.errors += 1;
    this.cell.totalMs += performance.now() - started;
  }

  private drop(): void {
    this.kinds.shift();
    this.started.shift();
  }
}

// Queries counted and timed per database and tenant. A connection keeps a reference to its own
// cell, so counting one query is a few additions and one histogram bucket; nothing is sampled, so
// the counts are exact.
import { LatencyHistogram, type QueryMinute } from '@platform/domain';
import { BackendType, FrontendType, TRANSACTION_IDLE } from './message-types.js';

/** One minute of a cell: what insights are made of. */
export interface MinuteFigures {
  queries: number;
  errors: number;
  totalMs: number;
  latency: LatencyHistogram;
}

export interface QueryCell {
  readonly databaseId: string;
  /** The tenant the connection was bound to at startup; null when none. */
  readonly tenantId: string | null;
  /** Since the gateway started (Prometheus counters). */
  queries: number;
  errors: number;
  /** Summed from when the query's message arrived to when its completion left the backend. */
  totalMs: number;
  /** Per minute (its number since the epoch), until written to the control plane. */
  readonly minutes: Map<number, MinuteFigures>;
}

const MINUTE_MS = 60_000;

export class QueryCounters {
  private readonly cells = new Map<string, QueryCell>();

  cell(databaseId: string, tenantId: string | null): QueryCell {
    const key = `${databaseId}/${tenantId ?? ''}`;
    let cell = this.cells.get(key);
    if (!cell) {
      cell = { databaseId, tenantId, queries: 0, errors: 0, totalMs: 0, minutes: new Map() };
      this.cells.set(key, cell);
    }
    return cell;
  }

  snapshot(): QueryCell[] {
    return [...this.cells.values()].map((cell) => ({ ...cell }));
  }

  /** Every minute not yet forgotten, the current one as far as it has come. */
  minutes(): QueryMinute[] {
    const rows: QueryMinute[] = [];
    for (const cell of this.cells.values()) {
      for (const [minute, figures] of cell.minutes) {
        const { queries, errors, totalMs, latency } = figures;
        rows.push({ databaseId: cell.databaseId, tenantId: cell.tenantId, minute: new Date(minute * MINUTE_MS), queries, errors, totalMs, latency: latency.toArrays() });
      }
    }
    return rows;
  }

  /** Forgets minutes before `minute` (written, and over: no query can end in them any more). */
  forgetBefore(minute: Date): void {
    const cutoff = Math.floor(minute.getTime() / MINUTE_MS);
    for (const cell of this.cells.values()) {
      for (const number of cell.minutes.keys()) if (number < cutoff) cell.minutes.delete(number);
    }
  }
}

/** Adds one ended query to its cell and to the cell's minute. */
export function recordQuery(cell: QueryCell, elapsedMs: number, error: boolean, wallMs: number): void {
  cell.queries += 1;
  if (error) cell.errors += 1;
  cell.totalMs += elapsedMs;
  const number = Math.floor(wallMs / MINUTE_MS);
  let figures = cell.minutes.get(number);
  if (!figures) {
    figures = { queries: 0, errors: 0, totalMs: 0, latency: new LatencyHistogram() };
    cell.minutes.set(number, figures);
  }
  figures.queries += 1;
  if (error) figures.errors += 1;
  figures.totalMs += elapsedMs;
  figures.latency.recordMicros(elapsedMs * 1000);
}

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
  // Methods, not arrow fields: a pooled client keeps its tracker while idle, and two closures each
  // (named ones, with their own property dictionaries under tsx) were a tenth of what it cost.
  private readonly kinds: Pending[] = [];
  private readonly started: number[] = [];
  private failed = false;
  /** The backend's transaction status from its last ReadyForQuery: I, T or E. */
  transactionStatus: number = TRANSACTION_IDLE;

  constructor(private readonly cell: QueryCell) {}

  fromClient(type: number): void {
    if (type === FrontendType.Query || type === FrontendType.FunctionCall) this.push(Pending.Simple);
    else if (type === FrontendType.Execute) this.push(Pending.Execute);
    else if (type === FrontendType.Sync) this.push(Pending.Sync);
  }

  fromServer(type: number, status: number): void {
    switch (type) {
      case BackendType.CommandComplete:
      case BackendType.EmptyQueryResponse:
      case BackendType.PortalSuspended:
        if (this.kinds[0] === Pending.Execute) this.finish(false);
        break;
      case BackendType.ErrorResponse:
        if (this.kinds[0] === Pending.Execute) {
          this.finish(true);
        } else if (this.kinds[0] === Pending.Simple && !this.failed) {
          // Counted now, not at ReadyForQuery: PostgreSQL flushes an error on its own, and a client
          // that hangs up on reading it would otherwise take the ReadyForQuery behind it uncounted.
          this.record(this.started[0], true);
          this.failed = true;
        }
        break;
      case BackendType.ReadyForQuery:
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
  }

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
    this.emptied();
    this.record(started, error);
  }

  private record(started: number, error: boolean): void {
    const now = performance.now();
    recordQuery(this.cell, now - started, error, performance.timeOrigin + now);
  }

  private drop(): void {
    this.kinds.shift();
    this.started.shift();
    this.emptied();
  }

  /** Nothing pending: the queues give their storage back (V8 keeps a shifted array's capacity), as an idle client holds them. */
  private emptied(): void {
    if (this.kinds.length === 0) {
      this.kinds.length = 0;
      this.started.length = 0;
    }
  }
}

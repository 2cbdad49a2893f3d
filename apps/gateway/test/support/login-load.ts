// A steady login load: several clients, each logging in, running one query and leaving, again and
// again. Each attempt is kept with its outcome, when it began, and the client port of its connection,
// so that a test can tell which attempts a worker's death may cost.
import type net from 'node:net';
import pg from 'pg';

export interface LoginAttempt {
  client: number;
  /** performance.now() before the connection was opened. */
  startedAt: number;
  /** The connection's own port, once it is connected. */
  localPort: number | null;
  outcome: { kind: 'pending' } | { kind: 'answered'; at: number } | { kind: 'failed'; at: number; error: string };
}

export class LoginLoad {
  readonly attempts: LoginAttempt[] = [];
  private readonly clients: Promise<void>[];
  private readonly stopped = new AbortController();

  /** Starts `clients` clients, each connecting with `config` (a new pg.Client per attempt). */
  constructor(clients: number, config: pg.ClientConfig) {
    this.clients = Array.from({ length: clients }, (_, client) => this.run(client, config));
  }

  /** Attempts in flight now. */
  pending(): LoginAttempt[] {
    return this.attempts.filter((attempt) => attempt.outcome.kind === 'pending');
  }

  /** Each client ends the attempt it is in, and starts no other. */
  async stop(): Promise<void> {
    this.stopped.abort();
    await Promise.all(this.clients);
  }

  private async run(client: number, config: pg.ClientConfig): Promise<void> {
    while (!this.stopped.signal.aborted) {
      const attempt: LoginAttempt = { client, startedAt: performance.now(), localPort: null, outcome: { kind: 'pending' } };
      this.attempts.push(attempt);
      const connection = new pg.Client(config);
      connection.on('error', () => {});
      // pg's plain socket, before its TLS: the port the gateway sees the client on.
      const socket = (connection as unknown as { connection: { stream: net.Socket } }).connection.stream;
      socket.once('connect', () => (attempt.localPort = socket.localPort ?? null));
      try {
        await connection.connect();
        await connection.query('select 1');
        attempt.outcome = { kind: 'answered', at: performance.now() };
      } catch (error) {
        attempt.outcome = { kind: 'failed', at: performance.now(), error: (error as Error).message };
      } finally {
        await connection.end().catch(() => {});
      }
    }
  }
}

import pg from 'pg';

/**
 * One process among replicas does a job: the one holding a session-level advisory lock on a
 * connection of its own to the control plane. The lock goes with the connection, so a process
 * that dies hands it on; `isLeader` tries to take it until it has it, and reconnects after a
 * broken connection.
 */
export class AdvisoryLeader {
  private client: pg.Client | null = null;
  private leading = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly lockKey: number,
  ) {}

  async isLeader(): Promise<boolean> {
    try {
      if (!this.client) {
        const client = new pg.Client({ connectionString: this.databaseUrl });
        client.on('error', () => this.drop(client));
        client.on('end', () => this.drop(client));
        await client.connect();
        this.client = client;
      }
      if (!this.leading) {
        const result = await this.client.query<{ taken: boolean }>('select pg_try_advisory_lock($1) as taken', [this.lockKey]);
        this.leading = result.rows[0].taken;
      }
      return this.leading;
    } catch {
      if (this.client) this.drop(this.client);
      return false;
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.leading = false;
    await client?.end().catch(() => {});
  }

  private drop(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.leading = false;
    void client.end().catch(() => {});
  }
}

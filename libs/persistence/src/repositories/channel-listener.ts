import pg from 'pg';

export interface ChannelHandlers {
  /** A notification on the channel, with its payload (committed). */
  notified(payload: string): void;
  /** The listening connection was lost: notifications may have been missed meanwhile. */
  lost(error: unknown): void;
}

/**
 * Listens on its own connection for the control plane's notifications on one channel. When the
 * connection drops it says so (callers forget what the notifications kept current) and reconnects.
 */
export class ChannelListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly applicationName: string,
    private readonly handlers: ChannelHandlers,
    private readonly reconnectMs = 1_000,
  ) {}

  /** Resolves once listening; throws if the first connection fails. */
  async start(): Promise<void> {
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** One pending reconnection at most, whichever failure asked for it. */
  private scheduleReconnect(): void {
    if (this.stopped) return;
    if (this.retry) clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect().catch((error: unknown) => {
        this.handlers.lost(error);
        this.scheduleReconnect();
      });
    }, this.reconnectMs);
    this.retry.unref();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: this.applicationName });
    let lost = false;
    const onLost = (error: unknown) => {
      if (lost || this.stopped) return;
      lost = true;
      if (this.client === client) this.client = null;
      this.handlers.lost(error);
      void client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('notification', (message) => {
      if (message.channel === this.channel && message.payload) this.handlers.notified(message.payload);
    });
    client.on('error', onLost);
    client.on('end', () => onLost(new Error('the listening connection ended')));
    try {
      await client.connect();
      await client.query(`listen ${client.escapeIdentifier(this.channel)}`);
    } catch (error) {
      lost = true;
      void client.end().catch(() => undefined);
      throw error;
    }
    if (this.stopped) {
      await client.end();
      return;
    }
    this.client = client;
  }
}

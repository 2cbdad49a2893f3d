import type { MikroORM } from '@mikro-orm/postgresql';
import { ChannelListener } from './channel-listener.js';

/** The channel gateways pass protocol 3.0 cancel requests on: every gateway listens on it. */
const GATEWAY_CANCEL_CHANNEL = 'gateway_cancel';

/**
 * Protocol 3.0 cancel requests between gateways, through the control plane: a 3.0 key is the
 * server's own 32 bits and names no server, so a gateway that does not hold the session notifies
 * every gateway, and the one that holds it forwards it (libs/postgres-gateway's cancel-keys.ts).
 * The payload is `<process id>:<key in hex>`; nothing is stored.
 */
export class ControlPlaneCancelRelay {
  private readonly listener: ChannelListener;

  constructor(
    private readonly orm: MikroORM,
    databaseUrl: string,
    handlers: { cancel(processId: number, secretKey: Buffer): void; lost(error: unknown): void },
  ) {
    this.listener = new ChannelListener(databaseUrl, GATEWAY_CANCEL_CHANNEL, 'gateway cancel relay', {
      notified: (payload) => {
        const match = /^(-?\d+):([0-9a-f]{2,512})$/.exec(payload);
        if (match && match[2].length % 2 === 0) handlers.cancel(Number(match[1]), Buffer.from(match[2], 'hex'));
      },
      lost: handlers.lost,
    });
  }

  /** Resolves once listening; throws if the first connection fails. */
  start(): Promise<void> {
    return this.listener.start();
  }

  stop(): Promise<void> {
    return this.listener.stop();
  }

  async publish(processId: number, secretKey: Buffer): Promise<void> {
    await this.orm.em.getConnection().execute('select pg_notify(?, ?)', [GATEWAY_CANCEL_CHANNEL, `${processId}:${secretKey.toString('hex')}`]);
  }
}

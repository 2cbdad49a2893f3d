import { ChannelListener } from './channel-listener.js';

/** The channel the client-notifications migration's trigger notifies on. */
const CLIENT_CHANGED_CHANNEL = 'oauth_client_changed';

export interface ClientChangeHandlers {
  /** A client was created, changed or deleted (committed). */
  changed(clientId: string): void;
  /** The listening connection was lost: changes may have been missed meanwhile. */
  lost(error: unknown): void;
}

/**
 * Listens on its own connection for the control plane's client-change notifications (a trigger
 * on oauth_clients, at commit). While it is connected, caches of clients follow every change at
 * once; when the connection drops it says so (callers forget everything) and reconnects.
 */
export class ClientChangeListener extends ChannelListener {
  constructor(databaseUrl: string, handlers: ClientChangeHandlers, reconnectMs = 1_000) {
    super(databaseUrl, CLIENT_CHANGED_CHANNEL, 'oauth client-change listener', { notified: (id) => handlers.changed(id), lost: (error) => handlers.lost(error) }, reconnectMs);
  }
}

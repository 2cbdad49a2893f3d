// Cancel keys. A client gets its backend's own process id in BackendKeyData (pg_cancel_backend,
// pg_terminate_backend and a notification's sender pid all name it), and a cancel request arrives
// on a new connection, perhaps at another gateway than the one that holds the session, with only
// that process id and the key. How the key finds its server again depends on the protocol:
//
// - Protocol 3.2 (PostgreSQL 18): the key may be up to 256 bytes. The gateway's key is a format
//   byte, the server's cancel slot (2 bytes) and the server's own key (32 random bytes from
//   PostgreSQL 18): any gateway reads the slot, and the server checks its own key, so no state is
//   shared and the key keeps all of the server's randomness.
// - Protocol 3.0: the key is 32 bits, all of them the server's own secret, and the process id must
//   be the real one: 32 bits cannot hold a slot besides without giving up secret bits the server
//   checks. So the client gets the server's key unchanged, and a gateway that does not hold the
//   session passes the request on to every gateway through the control plane (the app's cancel
//   relay: a notification per cancel, nothing per login); the one that holds it forwards it.
//
// Either way the gateway that holds a session keeps (process id, client's key) → server and the
// server's key while it lasts, and looks there first: a cancel that reaches it needs no lookup.

import { timingSafeEqual } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Backend } from './backends.js';

/** The first byte of the gateway's 3.2 keys: another layout would take another. */
const LONG_KEY_FORMAT = 1;
const LONG_KEY_HEADER = 3;
/** The highest slot a 3.2 key carries (two bytes); the domain hands out slots up to 511. */
export const MAX_CANCEL_SLOT = 0xffff;

/** The key a client of protocol 3.2 gets for a session on the server at `slot` whose own key is `backendKey`. */
export function longClientKey(slot: number, backendKey: Buffer): Buffer {
  if (!Number.isInteger(slot) || slot < 0 || slot > MAX_CANCEL_SLOT) throw new Error(`cancel slot ${slot} out of range`);
  const header = Buffer.from([LONG_KEY_FORMAT, slot >>> 8, slot & 0xff]);
  return Buffer.concat([header, backendKey]);
}

/** The slot and the server's key a 3.2 key of the gateway's carries; null for any other key. */
export function readLongClientKey(key: Buffer): { slot: number; backendKey: Buffer } | null {
  if (key.length <= LONG_KEY_HEADER || key[0] !== LONG_KEY_FORMAT) return null;
  return { slot: key.readUInt16BE(1), backendKey: key.subarray(LONG_KEY_HEADER) };
}

/** Whether a cancel request's key is a protocol 3.0 one (the server's own 32 bits). */
export const isShortKey = (key: Buffer): boolean => key.length === 4;

/**
 * Where a cancel request for a session goes: its server, and the server's own key; or, for a pooled
 * client (no server session of its own), whatever server session runs its query now, if any.
 */
export type HeldSession = { backend: Backend; backendKey: Buffer } | { cancel(): Promise<void> };

interface HeldKey {
  key: Buffer;
  session: HeldSession;
}

/** The sessions one gateway holds, by the process id and key their clients were given. */
export class SessionKeys {
  /**
   * One entry per process id, or several when process ids of two servers are equal: no array for
   * the common case, since an idle pooled client holds its entry as long as it stays connected.
   */
  private readonly byProcessId = new Map<number, HeldKey | HeldKey[]>();

  get size(): number {
    let count = 0;
    for (const entries of this.byProcessId.values()) count += Array.isArray(entries) ? entries.length : 1;
    return count;
  }

  /** Keeps the session's key until `client` closes. Process ids of two servers may be equal; keys tell them apart. */
  hold(processId: number, key: Buffer, session: HeldSession, client: Duplex): void {
    const entry: HeldKey = { key, session };
    const entries = this.byProcessId.get(processId);
    if (!entries) this.byProcessId.set(processId, entry);
    else if (Array.isArray(entries)) entries.push(entry);
    else this.byProcessId.set(processId, [entries, entry]);
    // 'close' comes once: `on` spares the wrapper `once` keeps per listener.
    client.on('close', () => this.forget(processId, entry));
  }

  private forget(processId: number, entry: HeldKey): void {
    const entries = this.byProcessId.get(processId);
    if (!Array.isArray(entries)) {
      if (entries === entry) this.byProcessId.delete(processId);
      return;
    }
    const left = entries.filter((each) => each !== entry);
    if (left.length > 1) this.byProcessId.set(processId, left);
    else if (left.length === 1) this.byProcessId.set(processId, left[0]);
    else this.byProcessId.delete(processId);
  }

  /** The session with this process id and client's key, if this gateway holds it. */
  find(processId: number, key: Buffer): HeldSession | undefined {
    const entries = this.byProcessId.get(processId);
    if (!entries) return undefined;
    const entry = (Array.isArray(entries) ? entries : [entries]).find((each) => each.key.length === key.length && timingSafeEqual(each.key, key));
    return entry?.session;
  }
}

/**
 * How many 3.0 cancel requests a gateway passes on to the others per second at most: each is a
 * notification to every gateway, and a client guessing keys must not turn into a flood of them.
 * One client address (an IPv6 client: its /64) gets a share of its own, so that one sending junk
 * cannot use up the others' budget.
 */
export class CancelBudget {
  private windowStart = 0;
  private taken = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(
    readonly perSecond: number,
    readonly perAddressPerSecond = Math.max(1, Math.floor(perSecond / 10)),
  ) {}

  take(address: string, now = Date.now()): boolean {
    if (now - this.windowStart >= 1_000) {
      this.windowStart = now;
      this.taken = 0;
      // Holds at most perSecond keys: only requests let through are counted.
      this.byAddress.clear();
    }
    const fromAddress = this.byAddress.get(address) ?? 0;
    if (this.taken >= this.perSecond || fromAddress >= this.perAddressPerSecond) return false;
    this.taken++;
    this.byAddress.set(address, fromAddress + 1);
    return true;
  }
}

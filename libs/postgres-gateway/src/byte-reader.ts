import type { Duplex } from 'node:stream';
import { ProtocolViolation } from './refusals.js';

/** What the handshake holds unread at most: its messages are small, and a flood is refused. */
const MAX_BUFFERED_BYTES = 1 << 20;

/** The peer went away (or the connection failed) before the bytes the gateway waited for came. */
export class ConnectionClosed extends Error {}

/**
 * Reads whole packets from a socket during the handshake, when the gateway must see each message
 * before deciding what to do. `detach` hands the socket over, paused, with what was read ahead.
 */
export class ByteReader {
  private buffered: Buffer[] = [];
  private size = 0;
  private wake: (() => void) | null = null;
  private closed: Error | null = null;

  constructor(private readonly socket: Duplex) {
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('close', this.onEnd);
    socket.on('error', this.onError);
    socket.resume();
  }

  get pendingBytes(): number {
    return this.size;
  }

  /** Whether the gateway is waiting for the peer's bytes (rather than for something else). */
  get isWaiting(): boolean {
    return this.wake !== null;
  }

  /** A startup-phase packet: an Int32 length (counting itself) and that many bytes in all. */
  async startupPacket(maxLength: number): Promise<Buffer> {
    const head = await this.peek(4);
    const length = head.readInt32BE(0);
    if (length < 8 || length > maxLength) throw new ProtocolViolation('invalid length of startup packet');
    return this.take(length);
  }

  /** A typed message: a type byte, an Int32 length (counting itself), the body. */
  async message(maxLength: number): Promise<{ type: string; raw: Buffer; body: Buffer }> {
    const head = await this.peek(5);
    const length = head.readInt32BE(1);
    if (length < 4 || length > maxLength) throw new ProtocolViolation('invalid message length');
    const raw = await this.take(length + 1);
    return { type: String.fromCharCode(raw[0]), raw, body: raw.subarray(5) };
  }

  /** Stops reading: the socket is paused and keeps its listeners for nothing else. */
  detach(): Buffer {
    this.socket.pause();
    this.socket.off('data', this.onData);
    this.socket.off('end', this.onEnd);
    this.socket.off('close', this.onEnd);
    this.socket.off('error', this.onError);
    const rest = Buffer.concat(this.buffered);
    this.buffered = [];
    this.size = 0;
    return rest;
  }

  /** The next `count` bytes, left to be read again (a message's type before its length is trusted). */
  async peek(count: number): Promise<Buffer> {
    await this.fill(count);
    const joined = this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered);
    this.buffered = [joined];
    return joined.subarray(0, count);
  }

  private async take(count: number): Promise<Buffer> {
    await this.fill(count);
    const joined = this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered);
    const taken = joined.subarray(0, count);
    const rest = joined.subarray(count);
    this.buffered = rest.length > 0 ? [rest] : [];
    this.size = rest.length;
    return taken;
  }

  private async fill(count: number): Promise<void> {
    while (this.size < count) {
      if (this.closed) throw this.closed;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private readonly onData = (chunk: Buffer): void => {
    this.buffered.push(chunk);
    this.size += chunk.length;
    if (this.size > MAX_BUFFERED_BYTES) {
      this.socket.pause();
      this.closed ??= new ProtocolViolation('too much data before the end of the handshake');
    }
    this.notify();
  };

  private readonly onEnd = (): void => {
    this.closed ??= new ConnectionClosed('the connection closed');
    this.notify();
  };

  private readonly onError = (error: Error): void => {
    this.closed ??= new ConnectionClosed(error.message);
    this.notify();
  };

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

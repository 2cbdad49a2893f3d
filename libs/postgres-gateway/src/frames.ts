// Message boundaries in a relayed byte stream. After the handshake the gateway passes each chunk on
// as it came and only walks the message headers (a type byte and a length) to see which messages
// went by: it never copies or decodes a body, so a 1 GB COPY row costs what a 5-byte one does. A
// full parser (pg-protocol's decodes every DataRow) would spend more than the relaying itself.

import { BackendType } from './message-types.js';

export class FramingError extends Error {}

/**
 * Calls `onMessage(type, status)` for every message in the stream, in order, with the byte after
 * the length for ReadyForQuery (the transaction status: I, T or E) and -1 for other types.
 * A message's header may arrive split across chunks; its body is skipped, never buffered.
 */
export class MessageScanner {
  private remaining = 0;
  private readonly header = Buffer.alloc(6);
  private headerLength = 0;

  constructor(private readonly onMessage: (type: number, status: number) => void) {}

  /** Throws FramingError on a length below 4, after reporting the messages before it. */
  scan(chunk: Buffer): void {
    let offset = 0;
    const end = chunk.length;
    while (offset < end) {
      if (this.remaining > 0) {
        const skipped = Math.min(this.remaining, end - offset);
        this.remaining -= skipped;
        offset += skipped;
        continue;
      }
      if (this.headerLength === 0 && end - offset >= 6) {
        // The common case: the whole header is in this chunk.
        const type = chunk[offset];
        const length = chunk.readInt32BE(offset + 1);
        if (length < 4) throw new FramingError(`invalid message length ${length}`);
        this.onMessage(type, type === BackendType.ReadyForQuery && length >= 5 ? chunk[offset + 5] : -1);
        offset += 1;
        this.remaining = length;
        continue;
      }
      offset = this.gather(chunk, offset);
    }
  }

  /** Collects a header that straddles chunks; answers the offset after what it took. */
  private gather(chunk: Buffer, offset: number): number {
    const needed = this.headerLength >= 5 ? 6 : 5;
    const taken = Math.min(needed - this.headerLength, chunk.length - offset);
    chunk.copy(this.header, this.headerLength, offset, offset + taken);
    this.headerLength += taken;
    offset += taken;
    if (this.headerLength < 5) return offset;
    const type = this.header[0];
    const length = this.header.readInt32BE(1);
    if (length < 4) throw new FramingError(`invalid message length ${length}`);
    const wantsStatus = type === BackendType.ReadyForQuery && length >= 5;
    if (wantsStatus && this.headerLength < 6) return offset;
    this.onMessage(type, wantsStatus ? this.header[5] : -1);
    // What is left of the body: the length counts itself, and the status byte when it was taken.
    this.remaining = length - 4 - (this.headerLength - 5);
    this.headerLength = 0;
    return offset;
  }
}

// Messages on the pooled endpoint's connections: whole ones split out of a buffer, and the start of a message whose end has not come yet, kept as the chunks it came in
// and joined once the whole message is there: a message that spans N reads costs one copy, not N
// (joining at every read copied a 300 MB row some 4,600 times, and held the worker meanwhile).
import { ProtocolViolation } from './refusals.js';

/** Splits `buffer` from `offset` into whole messages; answers those and where the rest starts. */
export function frames(buffer: Buffer, limit: number): { messages: Buffer[]; rest: number } {
  const messages: Buffer[] = [];
  let offset = 0;
  while (buffer.length - offset >= 5) {
    const length = buffer.readInt32BE(offset + 1);
    if (length < 4 || length > limit) throw new ProtocolViolation(`invalid message length ${length}`);
    if (buffer.length - offset < 1 + length) break;
    messages.push(buffer.subarray(offset, offset + 1 + length));
    offset += 1 + length;
  }
  return { messages, rest: offset };
}

/** The bytes a message needs in all, from its start: the header's 5 while the length is not there yet. */
function needed(start: Buffer): number {
  return start.length < 5 ? 5 : 1 + start.readInt32BE(1);
}

export class PartialMessage {
  private parts: Buffer[];
  private bytes: number;
  private need: number;

  /**
   * `start`: the bytes of the message that came so far (its header, or part of it, first); `limit`:
   * the longest message the reader takes (one past it is answered at once, for the reader to refuse).
   */
  constructor(
    start: Buffer,
    private readonly limit: number,
  ) {
    this.parts = [start];
    this.bytes = start.length;
    this.need = needed(start);
  }

  /** Fewer bytes than a message header came so far (its type and length are not known yet). */
  get headerCut(): boolean {
    return this.bytes < 5;
  }

  /** The bytes so far followed by `chunk`, whole or not (for a reader that walks them itself). */
  joinedWith(chunk: Buffer): Buffer {
    return Buffer.concat([...this.parts, chunk], this.bytes + chunk.length);
  }

  /** Adds a chunk: answers the joined bytes once the message is whole (what came after it too), else null. */
  add(chunk: Buffer): Buffer | null {
    this.parts.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes < this.need) return null;
    const joined = Buffer.concat(this.parts, this.bytes);
    const need = needed(joined);
    if (joined.length >= need || need < 5 || need - 1 > this.limit) return joined;
    // Only the header was whole: now its length says how much more is to come.
    this.parts = [joined];
    this.need = need;
    return null;
  }
}

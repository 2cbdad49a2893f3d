// The one import of pg-protocol's internals. Its public entry exports `serialize`, `parse` (which
// wants a whole stream and resolves when it ends) and `DatabaseError`; the handshake parses one
// backend message at a time from its own reader, and only the `Parser` class in `dist/` does that.
// Pinned by the lockfile; should an upgrade move it, this module is the only one to change.
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';

export type { BackendMessage };

/** One whole backend message (its type byte and length included), decoded. */
export function parseBackendMessage(raw: Buffer): BackendMessage {
  let parsed: BackendMessage | undefined;
  new Parser().parse(raw, (message) => (parsed = message));
  if (!parsed) throw new Error(`could not parse a backend message of type ${raw[0]}`);
  return parsed;
}

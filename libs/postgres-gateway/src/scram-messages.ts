// The client's two SCRAM-SHA-256 messages (RFC 5802), checked by the gateway itself before anything
// is relayed, by PostgreSQL 18's own rules (CheckSASLAuth, scram_exchange and the message readers
// behind them), condition for condition and with the same SQLSTATE, message and detail. They must
// be the same rules, not merely similar ones: a message the gateway lets through for a real name
// reaches the cluster, and any check the cluster makes that the gateway does not would answer a
// real name differently from an unknown one (whose exchange never leaves the gateway).

import { ProtocolViolation, refusals } from './refusals.js';

export const SCRAM_MECHANISM = 'SCRAM-SHA-256';
/** PostgreSQL's limit on one SASL message, its length word included (PG_MAX_SASL_MESSAGE_LENGTH). */
export const MAX_SASL_MESSAGE_LENGTH = 1024;
/** A SHA-256 key: the length a client proof must decode to. */
const PROOF_LENGTH = 32;

export interface ClientFirstMessage {
  /** `n` (no channel binding) or `y` (the client could, but thinks the server cannot): what `c=` must repeat. */
  bindingFlag: 'n' | 'y';
  clientNonce: string;
  /** The message as the client sent it, to go on to the cluster unchanged. */
  data: Buffer;
}

function malformed(detail: string): ProtocolViolation {
  return new ProtocolViolation('malformed SCRAM message', detail);
}

/**
 * The payload of a SASLInitialResponse body, or null when the client sent none (length -1: it will
 * send its first message after an empty challenge). The whole body must be taken up.
 */
export function readSaslInitialResponse(body: Buffer): Buffer | null {
  const nameEnd = body.indexOf(0);
  if (nameEnd < 0) throw new ProtocolViolation('invalid string in message');
  // The gateway offers SCRAM-SHA-256 alone (TLS ends here, so no -PLUS): anything else is refused
  // before the payload is looked at, as PostgreSQL does.
  if (body.toString('latin1', 0, nameEnd) !== SCRAM_MECHANISM) throw new ProtocolViolation('client selected an invalid SASL authentication mechanism');
  let cursor = nameEnd + 1;
  if (body.length - cursor < 4) throw new ProtocolViolation('insufficient data left in message');
  const length = body.readInt32BE(cursor);
  cursor += 4;
  let data: Buffer | null = null;
  if (length !== -1) {
    if (length < 0 || length > body.length - cursor) throw new ProtocolViolation('insufficient data left in message');
    data = body.subarray(cursor, cursor + length);
    cursor += length;
  }
  if (cursor !== body.length) throw new ProtocolViolation('invalid message format');
  return data;
}

/** The checks every SCRAM payload gets first: not empty, and no NUL (PostgreSQL reads it as a C string). */
function scramText(input: Buffer): string {
  if (input.length === 0) throw malformed('The message is empty.');
  if (input.includes(0)) throw malformed('Message length does not match input length.');
  // One character per byte, so that error details name bytes as PostgreSQL does.
  return input.toString('latin1');
}

/** A byte as PostgreSQL names it in an error: printable ASCII quoted, anything else in hex. */
function byteName(code: number): string {
  return code >= 0x21 && code <= 0x7e ? `'${String.fromCharCode(code)}'` : `0x${code.toString(16).padStart(2, '0')}`;
}

/**
 * Walks `name=value` attributes separated by commas. Past the end it reads a NUL, as PostgreSQL's
 * pointer into a C string does, so that the details it gives match (found "0x00").
 */
class AttributeReader {
  constructor(
    private readonly text: string,
    public at = 0,
  ) {}

  byte(offset = 0): number {
    const index = this.at + offset;
    return index < this.text.length ? this.text.charCodeAt(index) : 0;
  }

  get atEnd(): boolean {
    return this.at >= this.text.length;
  }

  /** The value of the attribute `name`, which must come next. */
  value(name: string): string {
    if (this.byte() !== name.charCodeAt(0)) throw malformed(`Expected attribute "${name}" but found "${byteName(this.byte())}".`);
    if (this.byte(1) !== 0x3d) throw malformed(`Expected character "=" for attribute "${name}".`);
    return this.valueFrom(this.at + 2);
  }

  /** Whatever attribute comes next: a letter, `=`, a value. */
  any(): { name: string; value: string } {
    const code = this.byte();
    if (code === 0) throw malformed('Attribute expected, but found end of string.');
    if (!((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a))) throw malformed(`Attribute expected, but found invalid character "${byteName(code)}".`);
    const name = String.fromCharCode(code);
    if (this.byte(1) !== 0x3d) throw malformed(`Expected character "=" for attribute "${name}".`);
    return { name, value: this.valueFrom(this.at + 2) };
  }

  /** Up to the next comma, which is passed over (a comma at the very end leaves the reader at the end). */
  private valueFrom(start: number): string {
    const comma = this.text.indexOf(',', start);
    const end = comma < 0 ? this.text.length : comma;
    this.at = comma < 0 ? end : comma + 1;
    return this.text.slice(start, end);
  }
}

/** RFC 5802 "printable": ASCII 0x21-0x7E but the comma. */
function isPrintable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x21 || code > 0x7e || code === 0x2c) return false;
  }
  return true;
}

/** The client-first-message (`input`: the SASL payload), checked. */
export function parseClientFirstMessage(input: Buffer): ClientFirstMessage {
  const text = scramText(input);
  const reader = new AttributeReader(text);
  const flag = reader.byte();
  if (flag === 0x6e || flag === 0x79) {
    // `n` or `y`: the gateway offers no channel binding (TLS ends here), so a client that could
    // bind and thinks the server cannot is right.
    if (reader.byte(1) !== 0x2c) throw malformed(`Comma expected, but found character "${byteName(reader.byte(1))}".`);
    reader.at = 2;
  } else if (flag === 0x70) {
    throw malformed('The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.');
  } else {
    throw malformed(`Unexpected channel-binding flag "${byteName(flag)}".`);
  }
  if (reader.byte() === 0x61) throw refusals.authorizationIdentityUnsupported();
  if (reader.byte() !== 0x2c) throw malformed(`Unexpected attribute "${byteName(reader.byte())}" in client-first-message.`);
  reader.at++;
  if (reader.byte() === 0x6d) throw refusals.scramExtensionUnsupported();
  // The SCRAM user name is ignored (the startup packet's counts), but must be there.
  reader.value('n');
  const clientNonce = reader.value('r');
  if (!isPrintable(clientNonce)) throw new ProtocolViolation('non-printable characters in SCRAM nonce');
  // Extensions may follow; none is supported, but each must be well formed.
  while (!reader.atEnd) reader.any();
  return { bindingFlag: flag === 0x6e ? 'n' : 'y', clientNonce, data: input };
}

/** Checks the client-final-message (`input`) against the exchange so far (`nonce`: the client's and the server's). */
export function checkClientFinalMessage(input: Buffer, first: ClientFirstMessage, nonce: string): void {
  const reader = new AttributeReader(scramText(input));
  const binding = reader.value('c');
  // Without channel binding, `c=` is the GS2 header base64-encoded: "n,," or "y,,", as sent first.
  if (!((binding === 'biws' && first.bindingFlag === 'n') || (binding === 'eSws' && first.bindingFlag === 'y'))) {
    throw new ProtocolViolation('unexpected SCRAM channel-binding attribute in client-final-message');
  }
  const finalNonce = reader.value('r');
  // Extensions may come between the nonce and the proof; the first `p` is the proof.
  let attribute: { name: string; value: string };
  do attribute = reader.any();
  while (attribute.name !== 'p');
  if (decodeBase64(attribute.value)?.length !== PROOF_LENGTH) throw malformed('Malformed proof in client-final-message.');
  if (!reader.atEnd) throw malformed('Garbage found at the end of client-final-message.');
  // Only once the message has been read through, as PostgreSQL orders it.
  if (finalNonce !== nonce) throw new ProtocolViolation('invalid SCRAM response', 'Nonce does not match.');
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Base64 decoded the way PostgreSQL decodes a proof (pg_b64_decode), null where it fails: padding
 * is required, whitespace refused, and once a `=` has been seen every later group of four yields as
 * many bytes as the padded one did. Node's decoder is lenient where PostgreSQL is not (it accepts a
 * proof without its padding), so it cannot stand in.
 */
export function decodeBase64(text: string): Buffer | null {
  // PostgreSQL's output buffer: three bytes per four characters, rounded down.
  const capacity = (text.length * 3) >> 2;
  const bytes: number[] = [];
  let group = 0;
  let count = 0;
  /** 0 until a `=`; then 1 (it came third: one byte per group) or 2 (fourth: two bytes). */
  let padding = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    let value: number;
    if (char === '=') {
      if (padding === 0) {
        if (count === 2) padding = 1;
        else if (count === 3) padding = 2;
        else return null;
      }
      value = 0;
    } else {
      value = BASE64_ALPHABET.indexOf(char);
      if (value < 0) return null;
    }
    group = group * 64 + value;
    if (++count < 4) continue;
    const decoded = [(group >> 16) & 0xff, (group >> 8) & 0xff, group & 0xff].slice(0, padding === 0 ? 3 : padding);
    for (const byte of decoded) {
      if (bytes.length + 1 > capacity) return null;
      bytes.push(byte);
    }
    group = 0;
    count = 0;
  }
  return count === 0 ? Buffer.from(bytes) : null;
}

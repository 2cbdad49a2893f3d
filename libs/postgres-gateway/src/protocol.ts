// The parts of PostgreSQL's wire protocol (versions 3.0 and 3.2) that the gateway reads in a client's
// startup packet and writes itself. Backend messages it relays are parsed with pg-protocol
// (backend-parser.ts); frontend messages have no parser there, and the gateway needs only the startup
// packet's fields and the type and length of every later message (frames.ts).

import type { Duplex } from 'node:stream';
import { BackendType, FrontendType } from './message-types.js';
import { ProtocolViolation, type ErrorFields } from './refusals.js';

/** The protocol codes that stand where a startup packet's version would. */
export const SSL_REQUEST_CODE = 80877103;
export const GSSENC_REQUEST_CODE = 80877104;
export const CANCEL_REQUEST_CODE = 80877102;
export const PROTOCOL_3_0 = 0x0003_0000;
/** PostgreSQL 18's protocol: the same messages, with cancel keys of up to 256 bytes. */
export const PROTOCOL_3_2 = 0x0003_0002;
/** The newest version the gateway speaks (PostgreSQL 18's PG_PROTOCOL_LATEST). */
export const PROTOCOL_LATEST = PROTOCOL_3_2;
/** The longest cancel key a BackendKeyData or CancelRequest may carry (protocol 3.2). */
export const MAX_CANCEL_KEY_LENGTH = 256;
/** PostgreSQL's own limit on a startup packet (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_PACKET_LENGTH = 10_000;
/** What the backend may send during the handshake at most, per message. */
export const MAX_BACKEND_HANDSHAKE_MESSAGE = 1 << 20;

export type StartupPacket =
  | { kind: 'ssl' }
  | { kind: 'gssenc' }
  /** `secretKey`: 4 bytes from a client of protocol 3.0, up to 256 from one of 3.2. */
  | { kind: 'cancel'; processId: number; secretKey: Buffer }
  /** `version`: the version the client asked for, as its packet carries it (major << 16 | minor). */
  | { kind: 'startup'; version: number; parameters: Map<string, string> }
  | { kind: 'unsupported'; version: number };

/** Reads a whole startup packet (its length included); throws ProtocolViolation on a malformed one. */
export function parseStartupPacket(packet: Buffer): StartupPacket {
  const code = packet.readInt32BE(4);
  if (code === SSL_REQUEST_CODE && packet.length === 8) return { kind: 'ssl' };
  if (code === GSSENC_REQUEST_CODE && packet.length === 8) return { kind: 'gssenc' };
  if (code === CANCEL_REQUEST_CODE) {
    // PostgreSQL 18's checks, in its words: the process id must be there, and a key of 1 to 256 bytes.
    if (packet.length < 12) throw new ProtocolViolation('invalid length of cancel request packet');
    const keyLength = packet.length - 12;
    if (keyLength === 0 || keyLength > MAX_CANCEL_KEY_LENGTH) throw new ProtocolViolation('invalid length of cancel key in cancel request packet');
    return { kind: 'cancel', processId: packet.readInt32BE(8), secretKey: Buffer.from(packet.subarray(12)) };
  }
  if (code >>> 16 !== 3) return { kind: 'unsupported', version: code };
  return { kind: 'startup', version: code, parameters: readParameters(packet.subarray(8)) };
}

function readParameters(body: Buffer): Map<string, string> {
  const parameters = new Map<string, string>();
  let offset = 0;
  for (;;) {
    const nameEnd = body.indexOf(0, offset);
    if (nameEnd < 0) throw new ProtocolViolation('invalid startup packet layout: expected terminator as last byte');
    if (nameEnd === offset) {
      if (nameEnd !== body.length - 1) throw new ProtocolViolation('invalid startup packet layout: expected terminator as last byte');
      return parameters;
    }
    const valueEnd = body.indexOf(0, nameEnd + 1);
    if (valueEnd < 0) throw new ProtocolViolation('invalid startup packet layout: expected terminator as last byte');
    parameters.set(body.toString('utf8', offset, nameEnd), body.toString('utf8', nameEnd + 1, valueEnd));
    offset = valueEnd + 1;
  }
}

/** A startup packet of protocol `version` (3.0 unless given) carrying `parameters`, in order. */
export function startupMessage(parameters: Iterable<[string, string]>, version: number = PROTOCOL_3_0): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of parameters) parts.push(Buffer.from(`${name}\0${value}\0`, 'utf8'));
  parts.push(Buffer.from([0]));
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(8);
  head.writeInt32BE(body.length + 8, 0);
  head.writeInt32BE(version, 4);
  return Buffer.concat([head, body]);
}

function message(type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = type;
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value, 0);
  return buffer;
}

/** An ErrorResponse with the fields PostgreSQL always sends (S, V, C, M) and D and H when given. */
export function errorResponse(fields: ErrorFields): Buffer {
  const entries: [string, string | undefined][] = [
    ['S', fields.severity],
    ['V', fields.severity],
    ['C', fields.code],
    ['M', fields.message],
    ['D', fields.detail],
    ['H', fields.hint],
  ];
  const text = entries
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => `${key}${value}\0`)
    .join('');
  return message(BackendType.ErrorResponse, Buffer.from(`${text}\0`, 'utf8'));
}

/**
 * Fields of PostgreSQL's ErrorResponse that name its own source: the file, line and routine that
 * raised it. The gateway's refusals never carry them (they would name no file of PostgreSQL's, and
 * a real name's refusal must read as an unknown one's), nor do the cluster's that it passes on.
 */
const SOURCE_FIELDS = new Set(['F', 'L', 'R']);

/** A backend's ErrorResponse (whole, its header included) without its source fields; every other field as it came. */
export function withoutSourceFields(raw: Buffer): Buffer {
  const fields = raw.subarray(5, raw.length - 1).toString('utf8').split('\0');
  const kept = fields.filter((field) => field !== '' && !SOURCE_FIELDS.has(field[0]));
  return message(BackendType.ErrorResponse, Buffer.from(`${kept.map((field) => `${field}\0`).join('')}\0`, 'utf8'));
}

/** How long a client refused at a deadline has to take the refusal before it is cut off. */
const REFUSAL_GRACE_MS = 1_000;

/**
 * Ends a connection whose deadline passed with an ErrorResponse (every refusal carries a
 * SQLSTATE), then cuts it off if the client does not close its side soon: it may never read.
 */
export function refuseAtDeadline(client: Duplex, fields: ErrorFields): void {
  if (client.destroyed || client.writableEnded) return;
  client.end(errorResponse(fields));
  setTimeout(() => client.destroy(), REFUSAL_GRACE_MS).unref();
}

/** AuthenticationSASL offering the mechanisms given. */
export function authenticationSasl(mechanisms: readonly string[]): Buffer {
  return message(BackendType.Authentication, Buffer.concat([int32(10), Buffer.from(`${mechanisms.map((name) => `${name}\0`).join('')}\0`, 'utf8')]));
}

export function authenticationSaslContinue(data: string): Buffer {
  return message(BackendType.Authentication, Buffer.concat([int32(11), Buffer.from(data, 'utf8')]));
}

/** The server-final-message (SASLFinal), then AuthenticationOk: a SCRAM login the gateway checked itself. */
export function authenticationSaslFinalAndOk(data: string): Buffer {
  return Buffer.concat([message(BackendType.Authentication, Buffer.concat([int32(12), Buffer.from(data, 'utf8')])), message(BackendType.Authentication, int32(0))]);
}

/** BackendKeyData: the process id, and the secret key (4 bytes in protocol 3.0, up to 256 in 3.2). */
export function backendKeyData(processId: number, secretKey: Buffer): Buffer {
  return message(BackendType.BackendKeyData, Buffer.concat([int32(processId), secretKey]));
}

/** A BackendKeyData's body read: PostgreSQL 18 sends a 32-byte key to clients of 3.2, 4 bytes to others. */
export function readBackendKeyData(raw: Buffer): { processId: number; secretKey: Buffer } {
  const length = raw.readInt32BE(1);
  if (raw.length !== length + 1 || length < 9 || length - 8 > MAX_CANCEL_KEY_LENGTH) throw new Error(`malformed BackendKeyData of length ${length}`);
  return { processId: raw.readInt32BE(5), secretKey: Buffer.from(raw.subarray(9)) };
}

/** A CancelRequest for `processId` with `secretKey`, of whatever length it has. */
export function cancelRequest(processId: number, secretKey: Buffer): Buffer {
  return Buffer.concat([int32(12 + secretKey.length), int32(CANCEL_REQUEST_CODE), int32(processId), secretKey]);
}

/**
 * NegotiateProtocolVersion: the version the session speaks (the newest the gateway has, or the
 * client's own when older), as a whole version number the way PostgreSQL sends it (0x0003000N:
 * a client reads 0 as a downgrade to before 3.0), and the options it ignored.
 */
export function negotiateProtocolVersion(version: number, unrecognized: readonly string[]): Buffer {
  const names = Buffer.from(unrecognized.map((name) => `${name}\0`).join(''), 'utf8');
  return message(BackendType.NegotiateProtocolVersion, Buffer.concat([int32(version), int32(unrecognized.length), names]));
}

/** The answer to SSLRequest and GSSENCRequest: one byte, S (go ahead) or N (no). */
export const SSL_ACCEPTED = Buffer.from('S', 'latin1');
export const SSL_REFUSED = Buffer.from('N', 'latin1');

/** SASLInitialResponse choosing `mechanism`, with `data` as its initial response. */
export function saslInitialResponse(mechanism: string, data: Buffer): Buffer {
  return message(FrontendType.SaslResponse, Buffer.concat([Buffer.from(`${mechanism}\0`, 'utf8'), int32(data.length), data]));
}

/** SASLResponse carrying `data`. */
export function saslResponse(data: Buffer): Buffer {
  return message(FrontendType.SaslResponse, data);
}

/** Terminate: the session ends without a word to the client. */
export const TERMINATE = message(FrontendType.Terminate, Buffer.alloc(0));

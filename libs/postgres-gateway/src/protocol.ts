// The parts of PostgreSQL's wire protocol (version 3.0) that the gateway reads in a client's
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
export const PROTOCOL_3_0 = 196608;
/** PostgreSQL's own limit on a startup packet (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_PACKET_LENGTH = 10_000;
/** What the backend may send during the handshake at most, per message. */
export const MAX_BACKEND_HANDSHAKE_MESSAGE = 1 << 20;

export type StartupPacket =
  | { kind: 'ssl' }
  | { kind: 'gssenc' }
  | { kind: 'cancel'; processId: number; secretKey: number }
  | { kind: 'startup'; minorVersion: number; parameters: Map<string, string> }
  | { kind: 'unsupported'; version: number };

/** Reads a whole startup packet (its length included); throws ProtocolViolation on a malformed one. */
export function parseStartupPacket(packet: Buffer): StartupPacket {
  const code = packet.readInt32BE(4);
  if (code === SSL_REQUEST_CODE && packet.length === 8) return { kind: 'ssl' };
  if (code === GSSENC_REQUEST_CODE && packet.length === 8) return { kind: 'gssenc' };
  if (code === CANCEL_REQUEST_CODE) {
    if (packet.length !== 16) throw new ProtocolViolation('invalid length of cancel request packet');
    return { kind: 'cancel', processId: packet.readInt32BE(8), secretKey: packet.readInt32BE(12) };
  }
  if (code >>> 16 !== 3) return { kind: 'unsupported', version: code };
  return { kind: 'startup', minorVersion: code & 0xffff, parameters: readParameters(packet.subarray(8)) };
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

/** A startup packet of protocol 3.0 carrying `parameters`, in order. */
export function startupMessage(parameters: Iterable<[string, string]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of parameters) parts.push(Buffer.from(`${name}\0${value}\0`, 'utf8'));
  parts.push(Buffer.from([0]));
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(8);
  head.writeInt32BE(body.length + 8, 0);
  head.writeInt32BE(PROTOCOL_3_0, 4);
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

export function backendKeyData(processId: number, secretKey: number): Buffer {
  return message(BackendType.BackendKeyData, Buffer.concat([int32(processId), int32(secretKey)]));
}

/** NegotiateProtocolVersion: the newest minor version the gateway speaks, and the options it ignored. */
export function negotiateProtocolVersion(minorVersion: number, unrecognized: readonly string[]): Buffer {
  const names = Buffer.from(unrecognized.map((name) => `${name}\0`).join(''), 'utf8');
  return message(BackendType.NegotiateProtocolVersion, Buffer.concat([int32(minorVersion), int32(unrecognized.length), names]));
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

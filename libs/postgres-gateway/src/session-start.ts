// The session's start, the last part of the handshake: what the cluster sends after AuthenticationOk
// goes to the client, with the cancel key wrapped for protocol 3.2, and a tenant named at login is
// checked first.
import type { Duplex } from 'node:stream';
import { serialize, type DatabaseError } from 'pg-protocol';
import { parseBackendMessage } from './backend-parser.js';
import type { ByteReader } from './byte-reader.js';
import { MAX_BACKEND_HANDSHAKE_MESSAGE, TERMINATE, backendKeyData, readBackendKeyData } from './protocol.js';
import { BackendType } from './message-types.js';
import { refusals, SqlState } from './refusals.js';

/** An ErrorResponse from the backend during the handshake: passed on to the client as it came, but for its source fields. */
export class BackendError extends Error {
  constructor(readonly raw: Buffer) {
    super('the backend refused the session');
  }
}

/** The backend's own process id and cancel key. */
export interface BackendKey {
  processId: number;
  secretKey: Buffer;
}

/**
 * After authentication: parameter statuses and notices go to the client as they came, the backend's
 * process id as it is, its key as `clientKey` makes it (cancel-keys.ts), and ReadyForQuery ends the
 * handshake. With a tenant to check, they are held back until the check has passed, so a refused
 * client never had a session. Answers the backend's key (null if it sent none).
 */
export async function startSession(
  client: Duplex,
  backend: Duplex,
  backendReader: ByteReader,
  clientKey: (backendKey: Buffer) => Buffer,
  check: { tenantId: string; database: string; setting?: string } | null,
): Promise<BackendKey | null> {
  const held: Buffer[] = [];
  let key: BackendKey | null = null;
  for (;;) {
    const { raw } = await backendReader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
    // pg-protocol reads a key of 4 bytes only: BackendKeyData is read here, whatever its key's length.
    if (raw[0] === BackendType.BackendKeyData) {
      key = readBackendKeyData(raw);
      held.push(backendKeyData(key.processId, clientKey(key.secretKey)));
      if (!check) client.write(held.pop()!);
      continue;
    }
    const message = parseBackendMessage(raw);
    if (message.name === 'error') throw new BackendError(raw);
    held.push(raw);
    if (message.name === 'readyForQuery') break;
    if (!check) client.write(held.pop()!);
  }
  if (check && !(await isLiveTenant(backend, backendReader, check.tenantId))) {
    backend.write(TERMINATE);
    throw refusals.tenantDoesNotExist(check.tenantId, check.database, check.setting);
  }
  client.write(held.length === 1 ? held[0] : Buffer.concat(held));
  return key;
}

/**
 * Whether `tenantId` is a live tenant, asked in the new session as its credential (never a more
 * privileged role): the tenants policy lets the session see the tenant it is set to. Everything is
 * qualified with its schema, so the session's search_path (which the client's options may set)
 * cannot put a function or operator of the customer's in its place. The id is a checked UUID.
 */
async function isLiveTenant(backend: Duplex, backendReader: ByteReader, tenantId: string): Promise<boolean> {
  backend.write(
    serialize.query(
      `select pg_catalog.count(*) operator(pg_catalog.>) 0 from public.tenants where id operator(pg_catalog.=) '${tenantId}'::pg_catalog.uuid and deleted is null`,
    ),
  );
  let live = false;
  let failure: DatabaseError | null = null;
  for (;;) {
    const { raw } = await backendReader.message(MAX_BACKEND_HANDSHAKE_MESSAGE);
    const message = parseBackendMessage(raw);
    if (message.name === 'dataRow') live = (message as unknown as { fields: (string | null)[] }).fields[0] === 't';
    if (message.name === 'error') failure = message as DatabaseError;
    if (message.name === 'readyForQuery') break;
  }
  // From built-in schema step 12 the data plane itself refuses a context that names no live tenant
  // (22023) as soon as a policy reads it: the same answer as an empty count.
  if (failure?.code === SqlState.invalidParameterValue) return false;
  if (failure) {
    throw refusals.tenantCheckFailed(failure.code, failure.message);
  }
  return live;
}

// The session start of a pooled client: no server session is its own, so the gateway makes the
// client's state on one of the pool's connections (its settings, its tenant, checked live there as
// on the session endpoint), then answers the client itself: the server's parameters as that
// connection reports them, a cancel key of the gateway's, ReadyForQuery.
import { randomBytes, randomInt } from 'node:crypto';
import { parseBackendMessage } from './backend-parser.js';
import type { ConnectionContext } from './context.js';
import { BackendType } from './message-types.js';
import { noteParameter } from './pooled-parameters.js';
import { PooledClientState, handOver } from './pooled-settings.js';
import { frames, handOverQuery } from './pooled-messages.js';
import { PooledSession } from './pooled-session.js';
import { PROTOCOL_3_2, backendKeyData, withoutSourceFields } from './protocol.js';
import { QueryTracker } from './query-counters.js';
import { Refusal, SqlState, refusals } from './refusals.js';
import type { RouteDecision } from './route.js';
import { BackendError } from './session-start.js';
import { PoolWaitExpired, type PoolLogin, type ServerConnection, type ServerPools } from './server-pool.js';
import type { LoginRequest } from './startup.js';
import type { HandshakeState } from './context.js';

const PARAMETER_STATUS = 'S'.charCodeAt(0);

const READY_IDLE = Buffer.from([BackendType.ReadyForQuery, 0, 0, 0, 5, 'I'.charCodeAt(0)]);

/** Sends `query` on a connection the caller holds and collects the answers up to its `readies` ReadyForQuery messages. */
function exchange(connection: ServerConnection, query: Buffer, readies: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const messages: Buffer[] = [];
    let rest = Buffer.alloc(0);
    connection.listener = {
      data: (chunk) => {
        const buffer = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
        const parsed = frames(buffer, 0x7fffffff);
        rest = Buffer.from(buffer.subarray(parsed.rest));
        for (const message of parsed.messages) {
          messages.push(Buffer.from(message));
          if (message[0] === BackendType.ReadyForQuery && --readies === 0) {
            connection.listener = null;
            resolve(messages);
            return;
          }
        }
      },
      closed: () => {
        connection.listener = null;
        reject(new Error('the pooled server connection closed during a login'));
      },
    };
    connection.socket.write(query);
  });
}

function parameterStatus(name: string, value: string): Buffer {
  const body = Buffer.from(`${name}\0${value}\0`, 'utf8');
  const header = Buffer.alloc(5);
  header[0] = 'S'.charCodeAt(0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/** A live-tenant check as the session endpoint makes it (session-start.ts), qualified against the customer's search_path. */
const liveTenantSql = (tenantId: string) =>
  `select pg_catalog.count(*) operator(pg_catalog.>) 0 from public.tenants where id operator(pg_catalog.=) '${tenantId}'::pg_catalog.uuid and deleted is null`;

/** Logs a pooled client in on its pool and starts its session. */
export async function startPooledSession(
  handshake: HandshakeState & { started(): void },
  login: LoginRequest,
  decision: Extract<RouteDecision, { kind: 'routed' }>,
  poolLogin: PoolLogin,
  context: ConnectionContext,
  pools: ServerPools,
): Promise<void> {
  const pool = pools.poolFor(poolLogin);
  const state = new PooledClientState(login, decision.tenantToCheck);
  let connection: ServerConnection;
  try {
    connection = await pool.acquire();
  } catch (error) {
    if (error instanceof PoolWaitExpired) throw refusals.tooManyClients();
    context.log.warn({ err: error }, 'a pool could not open a server connection for a login');
    throw new Refusal({ severity: 'FATAL', code: SqlState.cannotConnectNow, message: 'the gateway could not reach the database server; try again shortly' });
  }
  const check = decision.tenantToCheck;
  let answers: Buffer[] = [];
  // The connection is made this client's as for a transaction; the parameters it then has (as its
  // server last reported them) are what the client is told. Nothing to send: no round trip.
  const sql = handOver(connection, state);
  const queries = [...(sql === null ? [] : [handOverQuery(sql)]), ...(check ? [handOverQuery(liveTenantSql(check))] : [])];
  if (queries.length > 0) {
    try {
      answers = await exchange(connection, Buffer.concat(queries), queries.length);
    } catch (error) {
      pool.discard(connection);
      throw error;
    }
  }
  let readies = sql === null ? 1 : 0;
  let live = false;
  let failure: Buffer | null = null;
  for (const raw of answers) {
    if (raw[0] === BackendType.ReadyForQuery) readies++;
    else if (raw[0] === BackendType.ErrorResponse) failure ??= raw;
    else if (raw[0] === PARAMETER_STATUS) noteParameter(connection, raw);
    else if (raw[0] === 'D'.charCodeAt(0) && readies === 1) {
      live = (parseBackendMessage(raw) as unknown as { fields: (string | null)[] }).fields[0] === 't';
    }
  }
  // A setting the server refused leaves the connection's state unknown: reset in full next time.
  if (failure) connection.dirty = true;
  const statuses = connection.parameters;
  pool.release(connection);
  if (failure) {
    // A setting of the client's the server refused: the client hears it as PostgreSQL would say it at login.
    const fields = parseBackendMessage(failure) as unknown as { code?: string };
    if (check && fields.code === SqlState.invalidParameterValue) throw refusals.tenantDoesNotExist(check, login.database, login.tenantSetting);
    throw new BackendError(withoutSourceFields(failure));
  }
  if (check && !live) throw refusals.tenantDoesNotExist(check, login.database, login.tenantSetting);

  const out: Buffer[] = [];
  for (const [name, value] of statuses) out.push(parameterStatus(name, value));
  // The client has no backend of its own: the process id and key are the gateway's.
  const processId = randomInt(1, 0x7fffffff);
  const key = randomBytes(login.protocolVersion >= PROTOCOL_3_2 ? 32 : 4);
  out.push(backendKeyData(processId, key));
  out.push(READY_IDLE);
  handshake.client.write(Buffer.concat(out));
  handshake.started();
  const cell = context.counters?.cell(decision.route.database.id, decision.tenantId) ?? null;
  const session = new PooledSession(handshake.client, pool, state, cell ? new QueryTracker(cell) : null, context, pools.settings.preparedStatements);
  // A cancel request with this key reaches the server session running the client's query then, or
  // nothing. The session itself is what is held (its cancel()): no wrapper kept per idle client.
  context.sessionKeys.hold(processId, key, session, handshake.client);
  session.start(handshake.reader.detach());
}

// The session start of a pooled client: no server session is its own, so the gateway makes the
// client's state on one of the pool's connections (its settings, its tenant, checked live there as
// on the session endpoint), then answers the client itself: the server's parameters as that
// connection reports them, a cancel key of the gateway's, ReadyForQuery.
import { randomBytes, randomInt } from 'node:crypto';
import { parseBackendMessage } from './backend-parser.js';
import type { ConnectionContext } from './context.js';
import { BackendType, TRANSACTION_IDLE } from './message-types.js';
import { queryMessage, startClientSession, type ExchangeAnswer } from './pooled-hand-over.js';
import { PooledClientState } from './pooled-settings.js';
import { PooledSession } from './pooled-session.js';
import { PROTOCOL_3_2, backendKeyData, withoutSourceFields } from './protocol.js';
import { QueryTracker } from './query-counters.js';
import { SqlState, refusals, type Refusal } from './refusals.js';
import type { RouteDecision } from './route.js';
import { BackendError } from './session-start.js';
import { PoolWaitExpired, ServerUnreachable, type PoolLogin, type ServerConnection, type ServerPool, type ServerPools } from './server-pool.js';
import type { LoginRequest } from './startup.js';
import type { HandshakeState } from './context.js';

const READY_IDLE = Buffer.from([BackendType.ReadyForQuery, 0, 0, 0, 5, TRANSACTION_IDLE]);

function parameterStatus(name: string, value: string): Buffer {
  const body = Buffer.from(`${name}\0${value}\0`, 'utf8');
  const header = Buffer.alloc(5);
  header[0] = BackendType.ParameterStatus;
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/** The refusal of a login whose pool had no server connection for it. */
function poolRefusal(error: unknown, pool: ServerPool, context: ConnectionContext): Refusal {
  if (error instanceof PoolWaitExpired) return refusals.poolFull(error.waitMs, error.size);
  if (!(error instanceof ServerUnreachable)) context.log.warn({ err: error }, 'a pool could not open a server connection for a login');
  return refusals.serverUnreachable(pool.waitMs);
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
  const check = decision.tenantToCheck;
  // The client's session is made on one of the pool's connections as for a transaction (a full reset,
  // then its settings and tenant), and the tenant checked there; the parameters the connection then has
  // are what the client is told.
  let connection: ServerConnection;
  try {
    connection = await pool.acquire();
  } catch (error) {
    throw poolRefusal(error, pool, context);
  }
  let answer: ExchangeAnswer;
  try {
    answer = await startClientSession(connection, state, check ? [queryMessage(liveTenantSql(check))] : []);
  } catch (error) {
    pool.discard(connection);
    throw error;
  }
  const failure = answer.error ?? null;
  // A setting the server refused leaves the connection's state unknown: it is closed.
  if (failure) pool.discard(connection);
  else pool.release(connection);
  if (failure) {
    // A setting of the client's the server refused: the client hears it as PostgreSQL would say it at login.
    const fields = parseBackendMessage(failure) as unknown as { code?: string };
    if (check && fields.code === SqlState.invalidParameterValue) throw refusals.tenantDoesNotExist(check, login.database, login.tenantSetting);
    throw new BackendError(withoutSourceFields(failure));
  }
  // The tenant check's row comes last (after the settings').
  if (check && answer.rows.at(-1)?.[0] !== 't') throw refusals.tenantDoesNotExist(check, login.database, login.tenantSetting);
  const statuses = connection.parameters;

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

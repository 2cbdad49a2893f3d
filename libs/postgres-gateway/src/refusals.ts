// Every way the gateway refuses a connection, named once with its SQLSTATE, severity and words: the
// counterpart of the HTTP API's error catalogue. Many of these must read exactly as PostgreSQL's
// own (a client, or a person, should not be able to tell the gateway from the cluster where the
// gateway stands in for it), so the words live here beside the code rather than at each site.

import { TENANT_CONTEXT_SETTING } from '@platform/domain';

/** The fields of an ErrorResponse the gateway writes: PostgreSQL's S, V, C, M and, when given, D and H. */
export interface ErrorFields {
  severity: 'FATAL' | 'ERROR';
  /** SQLSTATE */
  code: string;
  message: string;
  detail?: string;
  hint?: string;
}

/** The SQLSTATEs the gateway answers with, by PostgreSQL's names for them (errcodes.txt). */
export const SqlState = {
  protocolViolation: '08P01',
  connectionFailure: '08006',
  featureNotSupported: '0A000',
  invalidParameterValue: '22023',
  invalidAuthorizationSpecification: '28000',
  invalidPassword: '28P01',
  invalidCatalogName: '3D000',
  tooManyConnections: '53300',
  queryCanceled: '57014',
  cannotConnectNow: '57P03',
} as const;
export type SqlState = (typeof SqlState)[keyof typeof SqlState];

/** A reason to end the connection with an ErrorResponse. */
export class Refusal extends Error {
  constructor(readonly fields: ErrorFields) {
    super(fields.message);
  }

  /** The SQLSTATE, as node's errors carry theirs. */
  get code(): string {
    return this.fields.code;
  }

  get detail(): string | undefined {
    return this.fields.detail;
  }
}

/** A malformed message from the client: PostgreSQL answers 08P01 and closes. Its words vary with the fault, so it has a class of its own. */
export class ProtocolViolation extends Refusal {
  constructor(message: string, detail?: string) {
    super({ severity: 'FATAL', code: SqlState.protocolViolation, message, ...(detail === undefined ? {} : { detail }) });
  }
}

type Words = Pick<ErrorFields, 'message' | 'detail' | 'hint'>;

/** A FATAL refusal of one SQLSTATE whose words `words` builds from its arguments. */
function fatal<A extends unknown[]>(code: SqlState, words: (...args: A) => Words): (...args: A) => Refusal {
  return (...args) => new Refusal({ severity: 'FATAL', code, ...words(...args) });
}

export const refusals = {
  // Before the startup packet is read.
  unsupportedProtocol: fatal(SqlState.featureNotSupported, (version: number) => ({
    message: `unsupported frontend protocol ${version >>> 16}.${version & 0xffff}: server supports 3.0 to 3.2`,
  })),
  tooManyClients: fatal(SqlState.tooManyConnections, () => ({ message: 'sorry, too many clients already' })),
  tlsRequired: fatal(SqlState.invalidAuthorizationSpecification, () => ({
    message: 'the gateway accepts TLS connections only',
    hint: 'Connect with sslmode=require, or sslmode=verify-full and the platform’s certificate authority.',
  })),

  // The startup packet's parameters.
  noUserName: fatal(SqlState.invalidAuthorizationSpecification, () => ({ message: 'no PostgreSQL user name specified in startup packet' })),
  replicationUnsupported: fatal(SqlState.featureNotSupported, () => ({ message: 'replication connections are not supported through the gateway' })),
  invalidTenantParameter: fatal(SqlState.invalidParameterValue, (name: string, value: string) => ({
    message: `invalid value for parameter "${name}": "${value}"`,
    hint: 'A tenant id is a UUID.',
  })),
  routedStartupTooLong: fatal(SqlState.protocolViolation, (length: number, max: number) => ({
    message: 'invalid length of startup packet',
    detail: `Routed to its database, the packet would be ${length} bytes, over ${max}.`,
  })),
  routesUnavailable: fatal(SqlState.cannotConnectNow, () => ({ message: 'the gateway cannot look up credentials right now; try again shortly' })),

  // The handshake's own deadline (GATEWAY_HANDSHAKE_TIMEOUT_MS): the client's fault in PostgreSQL's
  // words (which PostgreSQL itself logs without sending), or the platform's, to be tried again.
  clientTooSlow: fatal(SqlState.queryCanceled, () => ({ message: 'canceling authentication due to timeout' })),
  loginTimedOut: fatal(SqlState.cannotConnectNow, () => ({
    message: 'the login did not complete in time; try again shortly',
    detail: 'The platform did not answer within the gateway’s handshake timeout.',
  })),

  // The caps on logins in progress.
  tooManyLoginsFromAddress: fatal(SqlState.tooManyConnections, (max: number) => ({
    message: 'too many logins in progress from this address',
    detail: `At most ${max} logins from one address may be under way at once.`,
  })),
  tooManyLoginsOfUserFromAddress: fatal(SqlState.tooManyConnections, (user: string, max: number) => ({
    message: `too many logins in progress for user "${user}" from this address`,
    detail: `At most ${max} logins of one user from one address may be under way at once.`,
  })),
  tooManyLoginsOfUser: fatal(SqlState.tooManyConnections, (user: string, max: number) => ({
    message: `too many logins in progress for user "${user}"`,
    detail: `At most ${max} logins of one user may be under way at once.`,
  })),

  // The pooled endpoint's server sessions (pooled-session.ts, pooled-start.ts): a full pool and a
  // server that does not answer are told apart, so that an operator reading 53300 looks for clients
  // holding sessions, not for a server that is down or frozen.
  poolFull: fatal(SqlState.tooManyConnections, (waitMs: number, size: number) => ({
    message: 'sorry, too many clients already',
    detail: `All ${size} server connections of the pool were in use by other clients for ${waitMs} ms.`,
  })),
  serverUnreachable: fatal(SqlState.cannotConnectNow, (waitMs: number) => ({
    message: 'the database server did not answer; try again shortly',
    detail: `No server connection of the pool could be opened within ${waitMs} ms.`,
  })),
  serverConnectionLost: fatal(SqlState.connectionFailure, () => ({ message: 'the server closed the connection unexpectedly' })),
  serverStateUnknown: fatal(SqlState.connectionFailure, () => ({
    message: 'the gateway could not prepare a server connection for this client',
    detail: 'The server did not accept the session reset the pooled endpoint makes before a client’s transaction.',
  })),

  // Authentication: PostgreSQL's words, for real and unknown names alike.
  passwordFailed: fatal(SqlState.invalidPassword, (user: string) => ({ message: `password authentication failed for user "${user}"` })),
  authorizationIdentityUnsupported: fatal(SqlState.featureNotSupported, () => ({ message: 'client uses authorization identity, but it is not supported' })),
  scramExtensionUnsupported: fatal(SqlState.featureNotSupported, () => ({ message: 'client requires an unsupported SCRAM extension' })),

  // After the cluster accepted the password.
  databaseDoesNotExist: fatal(SqlState.invalidCatalogName, (database: string) => ({ message: `database "${database}" does not exist` })),
  databaseNotReady: fatal(SqlState.cannotConnectNow, (database: string, status: string) => ({
    message: `database "${database}" is not ready yet`,
    detail: `Its status is ${status}.`,
  })),
  tenantDoesNotExist: fatal(SqlState.invalidParameterValue, (tenantId: string, database: string, setting: string = TENANT_CONTEXT_SETTING) => ({
    message: `tenant "${tenantId}" does not exist`,
    detail: `${setting} names no live tenant of database "${database}".`,
    hint: 'Create the tenant first (INSERT INTO tenants, or POST .../tenants), or connect without a tenant.',
  })),
  /** The cluster failed the tenant check's query: its SQLSTATE, the gateway's words. */
  tenantCheckFailed: (code: string | undefined, reason: string) =>
    new Refusal({ severity: 'FATAL', code: code ?? SqlState.connectionFailure, message: 'the gateway could not check the tenant', detail: reason }),
  /**
   * The cluster's own refusal once it has judged the password, in the gateway's words: a wrong
   * password reads exactly as an unknown name's, and other errors keep only the fields the gateway's
   * own have (never the server's source file, line or routine).
   */
  fromCluster: (error: { severity?: string; code?: string; message: string; detail?: string; hint?: string }, user: string): Refusal => {
    if (error.code === SqlState.invalidPassword) return refusals.passwordFailed(user);
    return new Refusal({
      severity: error.severity === 'ERROR' ? 'ERROR' : 'FATAL',
      code: error.code ?? SqlState.connectionFailure,
      message: error.message,
      ...(error.detail ? { detail: error.detail } : {}),
      ...(error.hint ? { hint: error.hint } : {}),
    });
  },
};

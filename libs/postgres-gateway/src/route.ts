// Step three of a connection: where its login goes. The lookup is the control plane's; the decision
// is a pure function of the login and the route found, so every rule of it can be tested without a
// socket.
import { CREDENTIAL_ROLE_NAME, TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING, physicalDatabaseName, type ConnectionRoute } from '@platform/domain';
import { backendForRoute, type Backend } from './backends.js';
import type { ConnectionContext } from './context.js';
import { MAX_STARTUP_PACKET_LENGTH, startupMessage } from './protocol.js';
import { refusals, type Refusal } from './refusals.js';
import { isTenantParameter, joinOptions } from './startup-options.js';
import type { LoginRequest } from './startup.js';

export type RouteDecision =
  /** Refused before authentication, whatever the name. */
  | { kind: 'refused'; refusal: Refusal }
  /** No live credential has the name: an exchange that cannot succeed, as for a wrong password. */
  | { kind: 'unknown' }
  | {
      kind: 'routed';
      route: ConnectionRoute;
      backend: Backend;
      /** The startup packet for the cluster. */
      startup: Buffer;
      /** The tenant the session serves (the credential's own, or the one named at login): what its queries count under. */
      tenantId: string | null;
      /** A tenant named at login, to be checked live before the client has the session; null when there is none to check. */
      tenantToCheck: string | null;
      /** A refusal that waits for the cluster's verdict on the password, so that it tells nothing before. */
      refusalOnceAuthenticated: Refusal | null;
    };

/** Startup parameters the gateway sets itself or refuses, rather than passing on. */
const OWN_PARAMETERS = new Set(['user', 'database', 'options', 'replication']);
/** The longer of the tenant setting's names, for the packet's length check (the same for every login). */
const LONGEST_TENANT_SETTING = [TENANT_CONTEXT_SETTING, TENANT_CONTEXT_ALIAS].reduce((a, b) => (b.length > a.length ? b : a));
/** A physical name for routing checks of names that are no credential: every physical name has its length. */
const STAND_IN_PHYSICAL_NAME = physicalDatabaseName('00000000-0000-0000-0000-000000000000');

/** Where a login goes, given the route its name has (null: none) and the regions' clusters. */
export function decideRoute(login: LoginRequest, route: ConnectionRoute | null, clusters: readonly Backend[]): RouteDecision {
  // The packet's length is checked as if the tenant setting went on whatever the credential's
  // scope, and with a physical name for unknown names (they all have one length), so that the
  // check fails or passes alike for every kind of name. The physical name and the tenant setting
  // make the packet longer, and PostgreSQL drops one over its limit without a word: say so here
  // rather than close on the client.
  const longest = routedStartup({ ...login, tenantSetting: LONGEST_TENANT_SETTING }, login.user, route?.database.physicalName ?? STAND_IN_PHYSICAL_NAME, login.tenantId);
  if (longest.length > MAX_STARTUP_PACKET_LENGTH) return { kind: 'refused', refusal: refusals.routedStartupTooLong(longest.length, MAX_STARTUP_PACKET_LENGTH) };
  if (!route) return { kind: 'unknown' };

  // A scoped credential's tenant follows its role: the setting would change nothing, and its tenant
  // is the platform's, so it is not checked.
  const tenantToCheck = route.tenantId === null ? login.tenantId : null;
  const { database } = route;
  let refusalOnceAuthenticated: Refusal | null = null;
  // The name must be the credential's own database's, whatever other database exists.
  if (login.database !== database.name) refusalOnceAuthenticated = refusals.databaseDoesNotExist(login.database);
  else if (database.status !== 'READY') refusalOnceAuthenticated = refusals.databaseNotReady(login.database, database.status);
  return {
    kind: 'routed',
    route,
    backend: backendForRoute(route, clusters),
    startup: routedStartup(login, route.credentialId, database.physicalName, tenantToCheck),
    tenantId: route.tenantId ?? login.tenantId,
    tenantToCheck,
    refusalOnceAuthenticated,
  };
}

/**
 * The startup packet that goes to the cluster: the role, the physical database, the options with
 * the tenant setting (under the name the client gave it: from built-in schema step 12 both names
 * are an unscoped credential's context, and a later SET of the same name then replaces it rather
 * than disagreeing with it), the client's other parameters.
 */
function routedStartup(login: LoginRequest, role: string, physicalName: string, tenantId: string | null): Buffer {
  const options = [...login.options];
  if (tenantId !== null) options.push('-c', `${login.tenantSetting ?? TENANT_CONTEXT_SETTING}=${tenantId}`);
  const forwarded: [string, string][] = [
    ['user', role],
    ['database', physicalName],
  ];
  if (options.length > 0) forwarded.push(['options', joinOptions(options)]);
  for (const [name, value] of login.parameters) {
    if (!OWN_PARAMETERS.has(name) && !name.startsWith('_pq_.') && !isTenantParameter(name)) forwarded.push([name, value]);
  }
  // The client's version goes on: a client of 3.2 gets the cluster's long cancel key to wrap in its own.
  return startupMessage(forwarded, login.protocolVersion);
}

/** How much of the handshake's time a login may wait for its database's move, and how often it looks. */
const MOVE_WAIT_SHARE = 0.8;
const MOVE_POLL_MS = 100;

/**
 * The route of a login's name; only names shaped like credentials are looked up. A database whose
 * data is moving between servers (its source refusing logins) is waited for, most of the
 * handshake's time at most, so that the login goes where the data is.
 */
export async function lookUpRoute(user: string, context: ConnectionContext): Promise<ConnectionRoute | null> {
  if (!CREDENTIAL_ROLE_NAME.test(user)) return null;
  let route = await findRoute(user, context);
  const waitUntil = Date.now() + context.handshakeTimeoutMs * MOVE_WAIT_SHARE;
  while (route?.moving && Date.now() < waitUntil) {
    await new Promise((resolve) => setTimeout(resolve, MOVE_POLL_MS));
    route = await findRoute(user, context);
  }
  return route;
}

/** A control plane that cannot answer is the client's clear error, not a silent close. */
async function findRoute(user: string, context: ConnectionContext): Promise<ConnectionRoute | null> {
  try {
    return await context.routes.find(user);
  } catch (error) {
    context.log.warn({ err: error }, 'looking up a credential failed');
    throw refusals.routesUnavailable();
  }
}

// Step four on the pooled endpoint: the gateway checks the client's SCRAM proof itself, against the
// role's verifier (read from the server, cached), and keeps the ClientKey the proof yields for its
// pool's server logins: a pooled login forks no backend. The password is never seen. A role whose
// verifier the gateway cannot read (a database on a compute instance) logs in as on the session
// endpoint: its exchange is relayed, and it keeps its server session (not pooled).
import { type AuthenticatedBackend, relayToCluster } from './authenticate.js';
import type { Backend } from './backends.js';
import type { ConnectionContext, HandshakeState } from './context.js';
import { authenticationSaslFinalAndOk } from './protocol.js';
import { refusals } from './refusals.js';
import type { RouteDecision } from './route.js';
import { parseVerifier, serverFirstMessage, serverNonce, verifyClientProof, type ScramVerifier } from './scram-keys.js';
import { exchangeServerFirst, scramPrelude } from './scram-prelude.js';
import { sessionLimit } from './pool-size.js';
import type { PoolLogin } from './server-pool.js';
import type { LoginRequest } from './startup.js';

/** What a server's catalog holds of a credential role: its SCRAM verifier and the connection limits its sessions meet (-1: none). */
export interface RoleCatalogEntry {
  /** `pg_authid.rolpassword`. */
  verifier: string | null;
  /** `pg_authid.rolconnlimit`. */
  roleConnectionLimit: number;
  /** `pg_database.datconnlimit` of the login's database; null when it is not there. */
  databaseConnectionLimit: number | null;
}

/** Reads a role's catalog entry on a server (the physical database's limit with it); null when the gateway cannot or the role is not there. */
export interface VerifierSource {
  find(backend: Backend, role: string, physicalName: string): Promise<RoleCatalogEntry | null>;
}

/** A role's verifier, and the sessions its logins may hold on its cluster (sessionLimit; null: none). */
export interface RoleLogin {
  verifier: ScramVerifier;
  connectionLimit: number | null;
}

/**
 * How long a verifier read is kept: a credential's password never changes, and a deleted one has no
 * route. A changed connection limit is seen by the next read, a minute later at most.
 */
const VERIFIER_TTL_MS = 60_000;

/** Verifiers and connection limits by server, database and role, read once a minute at most. */
export class VerifierCache {
  private readonly cached = new Map<string, { found: RoleLogin | null; until: number }>();

  constructor(private readonly source: VerifierSource) {}

  async find(backend: Backend, role: string, physicalName: string): Promise<RoleLogin | null> {
    const key = `${backend.host}:${backend.port}/${physicalName}/${role}`;
    const hit = this.cached.get(key);
    if (hit && hit.until > Date.now()) return hit.found;
    const entry = await this.source.find(backend, role, physicalName);
    const verifier = parseVerifier(entry?.verifier ?? null);
    const found = entry && verifier ? { verifier, connectionLimit: sessionLimit(entry.databaseConnectionLimit, entry.roleConnectionLimit) } : null;
    this.cached.set(key, { found, until: Date.now() + VERIFIER_TTL_MS });
    return found;
  }

  /** Forgets a role's verifier (its proof failed: the next login reads it again). */
  forget(backend: Backend, role: string, physicalName: string): void {
    this.cached.delete(`${backend.host}:${backend.port}/${physicalName}/${role}`);
  }
}

export type PooledAuthentication = { kind: 'pooled'; login: PoolLogin } | { kind: 'session'; cluster: AuthenticatedBackend };

/**
 * The pooled endpoint's SCRAM exchange: unknown names fail as on the session endpoint; a role with a
 * verifier is checked here; one without is relayed to its server (session mode).
 */
export async function pooledAuthenticate(
  handshake: HandshakeState,
  login: LoginRequest,
  decision: Exclude<RouteDecision, { kind: 'refused' }>,
  context: ConnectionContext,
  verifiers: VerifierCache,
): Promise<PooledAuthentication> {
  const prelude = await scramPrelude(handshake, login, decision, context);
  const { first, user } = prelude;
  const { route, backend } = prelude.decision;
  let found: RoleLogin | null = null;
  // Only a region's cluster: the gateway has no superuser of compute instances.
  if (!route.database.server) {
    found = await verifiers.find(backend, route.credentialId, route.database.physicalName).catch((error: unknown) => {
      context.log.warn({ user, err: error }, 'reading a credential’s verifier failed; the login is relayed instead');
      return null;
    });
  }
  if (!found) return { kind: 'session', cluster: await relayToCluster(handshake, prelude, context) };

  const { verifier } = found;
  const nonce = `${first.clientNonce}${serverNonce()}`;
  const serverFirst = serverFirstMessage(first.clientNonce, nonce.slice(first.clientNonce.length), verifier);
  const { final } = await exchangeServerFirst(prelude, context, serverFirst, nonce);
  const proven = verifyClientProof(verifier, first.data, serverFirst, final);
  if (!proven) {
    verifiers.forget(backend, route.credentialId, route.database.physicalName);
    throw refusals.passwordFailed(user);
  }
  handshake.client.write(authenticationSaslFinalAndOk(proven.serverFinal));
  if (prelude.decision.refusalOnceAuthenticated) throw prelude.decision.refusalOnceAuthenticated;
  return {
    kind: 'pooled',
    login: {
      backend,
      physicalName: route.database.physicalName,
      role: route.credentialId,
      verifier,
      clientKey: proven.clientKey,
      // The control plane's figure where it has one (a compute instance's type), else the cluster's catalog.
      connectionLimit: route.connectionLimit ?? found.connectionLimit,
    },
  };
}

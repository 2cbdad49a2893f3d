// Step four on the pooled endpoint: the gateway checks the client's SCRAM proof itself, against the
// role's verifier (read from the server, cached), and keeps the ClientKey the proof yields for its
// pool's server logins: a pooled login forks no backend. The password is never seen. A role whose
// verifier the gateway cannot read (a database on a compute instance) logs in as on the session
// endpoint: its exchange is relayed, and it keeps its server session (not pooled).
import { type AuthenticatedBackend, failMockExchange, holdUserSlots, readClientFirst, readFinalMessage, relayAuthentication } from './authenticate.js';
import type { Backend } from './backends.js';
import type { ConnectionContext, HandshakeState } from './context.js';
import { BackendType } from './message-types.js';
import { authenticationSaslContinue, refuseAtDeadline } from './protocol.js';
import { refusals } from './refusals.js';
import type { RouteDecision } from './route.js';
import { parseVerifier, serverFirstMessage, serverNonce, verifyClientProof, type ScramVerifier } from './scram-keys.js';
import { checkClientFinalMessage } from './scram-messages.js';
import type { PoolLogin } from './server-pool.js';
import type { LoginRequest } from './startup.js';

/** Reads a role's SCRAM verifier (`pg_authid.rolpassword`) on a server; null when the gateway cannot. */
export interface VerifierSource {
  find(backend: Backend, role: string): Promise<string | null>;
}

/** How long a verifier read is kept: a credential's password never changes, and a deleted one has no route. */
const VERIFIER_TTL_MS = 60_000;

/** Verifiers by server and role, read once a minute at most. */
export class VerifierCache {
  private readonly cached = new Map<string, { verifier: ScramVerifier | null; until: number }>();

  constructor(private readonly source: VerifierSource) {}

  async find(backend: Backend, role: string): Promise<ScramVerifier | null> {
    const key = `${backend.host}:${backend.port}/${role}`;
    const hit = this.cached.get(key);
    if (hit && hit.until > Date.now()) return hit.verifier;
    const verifier = parseVerifier(await this.source.find(backend, role));
    this.cached.set(key, { verifier, until: Date.now() + VERIFIER_TTL_MS });
    return verifier;
  }

  /** Forgets a role's verifier (its proof failed: the next login reads it again). */
  forget(backend: Backend, role: string): void {
    this.cached.delete(`${backend.host}:${backend.port}/${role}`);
  }
}

export type PooledAuthentication = { kind: 'pooled'; login: PoolLogin } | { kind: 'session'; cluster: AuthenticatedBackend };

function authentication(code: number, data = ''): Buffer {
  const body = Buffer.concat([Buffer.alloc(4), Buffer.from(data, 'latin1')]);
  body.writeInt32BE(code, 0);
  const header = Buffer.alloc(5);
  header[0] = BackendType.Authentication;
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

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
  const { client, reader } = handshake;
  const user = login.user;
  const first = await readClientFirst(handshake, user);
  const answered = performance.now();
  holdUserSlots(handshake, user, context);
  if (decision.kind === 'unknown') return failMockExchange(client, reader, first, user, context, answered);

  let verifier: ScramVerifier | null = null;
  // Only a region's cluster: the gateway has no superuser of compute instances.
  if (!decision.route.database.server) {
    verifier = await verifiers.find(decision.backend, decision.route.credentialId).catch((error: unknown) => {
      context.log.warn({ user, err: error }, 'reading a credential’s verifier failed; the login is relayed instead');
      return null;
    });
  }
  if (!verifier) {
    const cluster = await relayAuthentication({ client, clientReader: reader, target: decision.backend, startup: decision.startup, first, user, context, answered, opened: (socket) => (handshake.backend = socket) });
    if (decision.refusalOnceAuthenticated) throw decision.refusalOnceAuthenticated;
    return { kind: 'session', cluster };
  }

  const nonce = `${first.clientNonce}${serverNonce()}`;
  const serverFirst = serverFirstMessage(first.clientNonce, nonce.slice(first.clientNonce.length), verifier);
  client.write(authenticationSaslContinue(serverFirst));
  const final = await readFinalMessage(reader, user, context, () => refuseAtDeadline(client, refusals.clientTooSlow().fields));
  checkClientFinalMessage(final, first, nonce);
  const proven = verifyClientProof(verifier, first.data, serverFirst, final);
  if (!proven) {
    verifiers.forget(decision.backend, decision.route.credentialId);
    throw refusals.passwordFailed(user);
  }
  client.write(Buffer.concat([authentication(12, proven.serverFinal), authentication(0)]));
  if (decision.refusalOnceAuthenticated) throw decision.refusalOnceAuthenticated;
  return {
    kind: 'pooled',
    login: { backend: decision.backend, physicalName: decision.route.database.physicalName, role: decision.route.credentialId, verifier, clientKey: proven.clientKey },
  };
}

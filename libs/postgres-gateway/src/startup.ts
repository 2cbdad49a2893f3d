// Step two of a connection: its startup packet, read as a login. Everything here is refused for
// every name alike, before any name is looked up.
import type { ConnectionContext, HandshakeState } from './context.js';
import { addressKey } from './login-limits.js';
import { PROTOCOL_LATEST, negotiateProtocolVersion, type StartupPacket } from './protocol.js';
import { ProtocolViolation, refusals } from './refusals.js';
import { takeTenant } from './startup-options.js';

/** What a client asks for in its startup packet. */
export interface LoginRequest {
  user: string;
  /** The database it names (its user name when it names none, as PostgreSQL has it). */
  database: string;
  /** Every parameter, as sent. */
  parameters: ReadonlyMap<string, string>;
  /** The tenant it names, in its options or as a parameter; null for none. */
  tenantId: string | null;
  /** The setting that named it (`platform.tenant_id` or `nile.tenant_id`), passed on under that name; the former when absent. */
  tenantSetting?: string;
  /** Its options without the tenant setting. */
  options: readonly string[];
  /** The protocol version the session speaks: the client's, or the gateway's newest when the client asked for more. */
  protocolVersion: number;
}

/** Parameter values that turn replication off, as PostgreSQL reads them. */
const REPLICATION_OFF = ['false', 'off', 'no', '0'];

/**
 * Reads the login of a startup packet, answering NegotiateProtocolVersion as PostgreSQL 18 does
 * (when the client asks for a version past 3.2, or for `_pq_.` options: none is known), and takes
 * the login's slot of its client address (held until the session starts).
 */
export function readLogin(handshake: HandshakeState, packet: Exclude<StartupPacket, { kind: 'cancel' }>, context: ConnectionContext): LoginRequest {
  if (packet.kind !== 'startup') {
    if (packet.kind === 'unsupported') throw refusals.unsupportedProtocol(packet.version);
    throw new ProtocolViolation('unexpected negotiation request');
  }
  if (context.openConnections() > context.maxConnections) throw refusals.tooManyClients();
  if (!handshake.secure && !context.allowPlain) throw refusals.tlsRequired();

  const parameters = packet.parameters;
  const unrecognized = [...parameters.keys()].filter((name) => name.startsWith('_pq_.'));
  const protocolVersion = Math.min(packet.version, PROTOCOL_LATEST);
  if (packet.version > PROTOCOL_LATEST || unrecognized.length > 0) handshake.client.write(negotiateProtocolVersion(protocolVersion, unrecognized));
  const user = parameters.get('user');
  if (!user) throw refusals.noUserName();
  const replication = parameters.get('replication');
  if (replication !== undefined && !REPLICATION_OFF.includes(replication.toLowerCase())) throw refusals.replicationUnsupported();
  const requested = takeTenant(parameters);
  if ('invalid' in requested) throw refusals.invalidTenantParameter(requested.invalid.name, requested.invalid.value);

  const releaseAddress = context.loginsPerAddress.take(addressKey(handshake.address));
  if (!releaseAddress) throw refusals.tooManyLoginsFromAddress(context.loginsPerAddress.max);
  handshake.hold(releaseAddress);
  return {
    user,
    database: parameters.get('database') || user,
    parameters,
    tenantId: requested.tenantId,
    ...(requested.setting ? { tenantSetting: requested.setting } : {}),
    options: requested.rest,
    protocolVersion,
  };
}

import { createHmac, randomBytes } from 'node:crypto';
import type { ByteReader } from './byte-reader.js';
import { MAX_AUTH_MESSAGE_LENGTH, ProtocolViolation, authenticationSasl, authenticationSaslContinue, parseSaslInitialResponse } from './protocol.js';

const MECHANISM = 'SCRAM-SHA-256';

/**
 * For a user name that is no credential, goes through a SCRAM-SHA-256 exchange that cannot succeed,
 * as PostgreSQL does for an unknown role, so that the answer (password authentication failed) and
 * the steps before it read the same as for a wrong password. The salt is derived from the name with
 * the gateway's key, so it is the same at every attempt, as a real role's is. Nothing is relayed:
 * a name that is not a credential's never reaches a cluster, whatever role of the cluster it names.
 */
export async function failScramExchange(client: { write(data: Buffer): unknown }, reader: ByteReader, user: string, saltKey: Buffer): Promise<void> {
  client.write(authenticationSasl([MECHANISM]));
  const initial = await reader.message(MAX_AUTH_MESSAGE_LENGTH);
  if (initial.type !== 'p') throw new ProtocolViolation(`expected SASL response, got message type ${initial.raw[0]}`);
  const { mechanism, data } = parseSaslInitialResponse(initial.body);
  if (mechanism !== MECHANISM) throw new ProtocolViolation('client selected an invalid SASL authentication mechanism');
  const clientNonce = /(?:^|,)r=([^,]+)/.exec(data)?.[1];
  if (!clientNonce) throw new ProtocolViolation('malformed SCRAM message');
  const salt = createHmac('sha256', saltKey).update(user).digest().subarray(0, 16).toString('base64');
  client.write(authenticationSaslContinue(`r=${clientNonce}${randomBytes(18).toString('base64')},s=${salt},i=4096`));
  const final = await reader.message(MAX_AUTH_MESSAGE_LENGTH);
  if (final.type !== 'p') throw new ProtocolViolation(`expected SASL response, got message type ${final.raw[0]}`);
}

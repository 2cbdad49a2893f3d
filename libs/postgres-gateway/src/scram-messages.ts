// The client's two SCRAM-SHA-256 messages (RFC 5802), checked by the gateway itself before anything
// is relayed: a login of a real credential and one of an unknown name must fail the same way for
// the same bytes, and only the gateway sees both kinds. The cluster then only ever receives
// well-formed messages, so what it can still say is the password's verdict.

import { ProtocolViolation } from './protocol.js';

export const SCRAM_MECHANISM = 'SCRAM-SHA-256';

export interface ClientFirstMessage {
  /** `n,,` or `y,,`: what the client-final message's `c=` must carry back, base64-encoded. */
  gs2Header: string;
  clientNonce: string;
}

/** An error of the same shape for every malformed message, as PostgreSQL's are. */
function malformed(detail: string): ProtocolViolation {
  return new ProtocolViolation('malformed SCRAM message', detail);
}

// Printable ASCII but the comma (RFC 5802 "printable").
const PRINTABLE = /^[\x21-\x2b\x2d-\x7e]+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function parseClientFirstMessage(data: string): ClientFirstMessage {
  // gs2-header: a channel-binding flag and an optional authzid, then client-first-message-bare.
  const match = /^([nyp])(=[^,]*)?,([^,]*),(.*)$/s.exec(data);
  if (!match) throw malformed('The client-first-message is not a GS2 header and a bare message.');
  const [, flag, bindingName, authzid, bare] = match;
  // TLS ends at the gateway: the cluster's end of the channel is another one.
  if (flag === 'p' || bindingName !== undefined) throw malformed('Channel binding is not supported through the gateway.');
  if (authzid !== '') throw new ProtocolViolation('client uses authorization identity, but it is not supported', undefined, '0A000');
  const attributes = bare.split(',');
  if (attributes[0].startsWith('m=')) throw malformed('The client requires an unsupported SCRAM extension.');
  if (!attributes[0].startsWith('n=')) throw malformed('Expected attribute "n" in the client-first-message.');
  const nonce = attributes[1];
  if (!nonce?.startsWith('r=') || !PRINTABLE.test(nonce.slice(2))) throw malformed('Expected a printable attribute "r" in the client-first-message.');
  return { gs2Header: `${flag},,`, clientNonce: nonce.slice(2) };
}

/** Checks the client-final-message against the exchange so far (`nonce`: the client's and the server's). */
export function checkClientFinalMessage(data: string, first: ClientFirstMessage, nonce: string): void {
  const attributes = data.split(',');
  const channel = attributes[0];
  if (!channel?.startsWith('c=') || !BASE64.test(channel.slice(2))) throw malformed('Expected attribute "c" in the client-final-message.');
  if (Buffer.from(channel.slice(2), 'base64').toString('latin1') !== first.gs2Header) throw malformed('The channel binding data does not match the client-first-message.');
  if (attributes[1] !== `r=${nonce}`) throw malformed('The nonce does not match the exchange.');
  const proof = attributes.at(-1) ?? '';
  if (attributes.length < 3 || !proof.startsWith('p=') || !BASE64.test(proof.slice(2)) || Buffer.from(proof.slice(2), 'base64').length !== 32) {
    throw malformed('Expected a proof of 32 bytes as the last attribute of the client-final-message.');
  }
}

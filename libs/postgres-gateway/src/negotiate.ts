// Step one of a connection: before its startup packet a client may ask for TLS (SSLRequest) or GSS
// encryption (GSSENCRequest), or start TLS at once (PostgreSQL 17's direct TLS, `sslnegotiation=direct`).
// The gateway offers TLS when it has a certificate and never GSS.
import { once } from 'node:events';
import type net from 'node:net';
import tls from 'node:tls';
import { ByteReader, ConnectionClosed } from './byte-reader.js';
import type { ConnectionContext, HandshakeState } from './context.js';
import { MAX_STARTUP_PACKET_LENGTH, SSL_ACCEPTED, SSL_REFUSED, parseStartupPacket, type StartupPacket } from './protocol.js';
import { ProtocolViolation } from './refusals.js';

/** The first byte of a TLS handshake record (a ClientHello): no startup packet begins with it (its length would pass 10000). */
const TLS_HANDSHAKE_RECORD = 0x16;
/** The ALPN protocol PostgreSQL's TLS speaks; a direct TLS connection must name it. */
const ALPN_PROTOCOL = 'postgresql';

/** Answers the client's encryption requests, upgrading its stream to TLS when asked; answers the first packet that is no such request. */
export async function negotiate(handshake: HandshakeState, socket: net.Socket, context: ConnectionContext): Promise<StartupPacket> {
  if (context.tls && (await handshake.reader.peek(1))[0] === TLS_HANDSHAKE_RECORD) {
    // Direct TLS: the ClientHello already read goes back to the socket, which TLS reads first.
    socket.unshift(handshake.reader.detach());
    await secure(handshake, socket, context.tls);
    // As PostgreSQL 17 does, direct TLS without ALPN is closed without a word (it logs the reason).
    if ((handshake.client as tls.TLSSocket).alpnProtocol !== ALPN_PROTOCOL) {
      throw new ConnectionClosed('received direct SSL connection request without ALPN protocol negotiation extension');
    }
  }
  let packet = parseStartupPacket(await handshake.reader.startupPacket(MAX_STARTUP_PACKET_LENGTH));
  // libpq may ask for GSS encryption first and TLS next: each at most once, before the startup.
  for (let negotiations = 0; (packet.kind === 'ssl' || packet.kind === 'gssenc') && negotiations < 2; negotiations++) {
    if (packet.kind === 'ssl' && context.tls && !handshake.secure) {
      // Bytes behind the request would be read as if they had come encrypted.
      if (handshake.reader.pendingBytes > 0) throw new ProtocolViolation('received unencrypted data after SSL request');
      handshake.reader.detach();
      socket.write(SSL_ACCEPTED);
      await secure(handshake, socket, context.tls);
    } else {
      handshake.client.write(SSL_REFUSED);
    }
    packet = parseStartupPacket(await handshake.reader.startupPacket(MAX_STARTUP_PACKET_LENGTH));
  }
  return packet;
}

/** The TLS handshake over the client's socket (a client offering ALPN without `postgresql` is refused in it); the client's stream is TLS from then on. */
async function secure(handshake: HandshakeState, socket: net.Socket, secureContext: tls.SecureContext): Promise<void> {
  handshake.client = await upgradeToTls(socket, secureContext);
  handshake.secure = true;
  handshake.reader = new ByteReader(handshake.client);
}

async function upgradeToTls(socket: net.Socket, secureContext: tls.SecureContext): Promise<tls.TLSSocket> {
  const secure = new tls.TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: [ALPN_PROTOCOL] });
  const failed = once(secure, 'error').then(([error]) => {
    throw new ConnectionClosed(`TLS handshake failed: ${(error as Error).message}`);
  });
  await Promise.race([once(secure, 'secure'), failed]);
  failed.catch(() => {});
  return secure;
}

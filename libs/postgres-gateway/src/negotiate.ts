// Step one of a connection: before its startup packet a client may ask for TLS (SSLRequest) or GSS
// encryption (GSSENCRequest). The gateway offers TLS when it has a certificate and never GSS.
import { once } from 'node:events';
import type net from 'node:net';
import tls from 'node:tls';
import { ByteReader, ConnectionClosed } from './byte-reader.js';
import type { ConnectionContext, HandshakeState } from './context.js';
import { MAX_STARTUP_PACKET_LENGTH, SSL_ACCEPTED, SSL_REFUSED, parseStartupPacket, type StartupPacket } from './protocol.js';
import { ProtocolViolation } from './refusals.js';

/** Answers the client's encryption requests, upgrading its stream to TLS when asked; answers the first packet that is no such request. */
export async function negotiate(handshake: HandshakeState, socket: net.Socket, context: ConnectionContext): Promise<StartupPacket> {
  let packet = parseStartupPacket(await handshake.reader.startupPacket(MAX_STARTUP_PACKET_LENGTH));
  // libpq may ask for GSS encryption first and TLS next: each at most once, before the startup.
  for (let negotiations = 0; (packet.kind === 'ssl' || packet.kind === 'gssenc') && negotiations < 2; negotiations++) {
    if (packet.kind === 'ssl' && context.tls && !handshake.secure) {
      // Bytes behind the request would be read as if they had come encrypted.
      if (handshake.reader.pendingBytes > 0) throw new ProtocolViolation('received unencrypted data after SSL request');
      handshake.reader.detach();
      socket.write(SSL_ACCEPTED);
      handshake.client = await upgradeToTls(socket, context.tls);
      handshake.secure = true;
      handshake.reader = new ByteReader(handshake.client);
    } else {
      handshake.client.write(SSL_REFUSED);
    }
    packet = parseStartupPacket(await handshake.reader.startupPacket(MAX_STARTUP_PACKET_LENGTH));
  }
  return packet;
}

async function upgradeToTls(socket: net.Socket, secureContext: tls.SecureContext): Promise<tls.TLSSocket> {
  const secure = new tls.TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: ['postgresql'] });
  const failed = once(secure, 'error').then(([error]) => {
    throw new ConnectionClosed(`TLS handshake failed: ${(error as Error).message}`);
  });
  await Promise.race([once(secure, 'secure'), failed]);
  failed.catch(() => {});
  return secure;
}

import type { SecureContextOptions } from 'node:tls';

/**
 * The one TLS policy of every server the platform runs (the gateway, and apps/api and apps/oauth
 * over https): Mozilla's "intermediate" profile without its DHE suites. TLS 1.2 offers only
 * ECDHE key exchange (forward secrecy) with AEAD ciphers; Node's default list also has CBC suites
 * with SHA-1 MACs (ECDHE-ECDSA-AES128-SHA) and static-RSA ones (AES256-SHA), which a scanner flags
 * and no client we support needs. TLS 1.3's own suites are all AEAD with forward secrecy.
 */
const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
];
// Named explicitly: Node sets TLS 1.3's suites from the same string.
const TLS13_CIPHERS = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'];

/** Spread into `tls.createSecureContext`, `https.createServer` and the like. */
export const SERVER_TLS_POLICY = Object.freeze({
  minVersion: 'TLSv1.2',
  maxVersion: 'TLSv1.3',
  ciphers: [...TLS13_CIPHERS, ...TLS12_CIPHERS].join(':'),
  // The server's order: the client's first pick may be the slowest of the allowed ones.
  honorCipherOrder: true,
} satisfies SecureContextOptions);

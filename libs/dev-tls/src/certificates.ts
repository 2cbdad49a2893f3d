// A certificate authority and the server certificates it signs, as PEM, for development and
// tests. Node can read and check certificates but not make them; @peculiar/x509 writes them.
// @peculiar/x509 registers its algorithms through tsyringe, which needs the Reflect metadata API
// before it loads: this import must stay first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';

/** A certificate and its private key (PKCS#8), both PEM. */
export interface PemPair {
  cert: string;
  key: string;
}

const DAY_MS = 86_400_000;
/** Back-dated this much, so that a client whose clock is a little behind still accepts a new certificate. */
const CLOCK_SKEW_MS = 3_600_000;
const EC_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;

export interface CertificateAuthorityOptions {
  commonName?: string;
  /** 3650 (about 10 years) unless told. */
  validDays?: number;
  now?: Date;
}

/** A new ECDSA P-256 certificate authority (self-signed, CA:true, pathlen 0, keyCertSign and cRLSign). */
export async function createCertificateAuthority(options: CertificateAuthorityOptions = {}): Promise<PemPair> {
  const now = options.now ?? new Date();
  const keys = await newKeyPair();
  // A name of its own, so that two development CAs in one trust store can be told apart.
  const name = `CN=${escapeName(options.commonName ?? `Platform development CA ${randomBytes(4).toString('hex')}`)}`;
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: randomSerial(),
      subject: name,
      issuer: name,
      notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
      notAfter: new Date(now.getTime() + (options.validDays ?? 3650) * DAY_MS),
      publicKey: keys.publicKey,
      signingKey: keys.privateKey,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey) };
}

export interface ServerCertificateOptions {
  /** DNS names and IP addresses (IPv6 with or without brackets) the certificate is for; the first is its common name. */
  hosts: string[];
  /** 365 unless told; never past the authority's own end. */
  validDays?: number;
  now?: Date;
}

/** A new ECDSA P-256 server certificate (serverAuth) for `hosts`, signed by `ca`. */
export async function issueServerCertificate(ca: PemPair, options: ServerCertificateOptions): Promise<PemPair> {
  const hosts = options.hosts.map(bareHost);
  if (hosts.length === 0 || hosts.some((host) => host === '')) throw new Error('a server certificate needs at least one host, and no empty one');
  const now = options.now ?? new Date();
  const authority = new x509.X509Certificate(ca.cert);
  const signingKey = await webcrypto.subtle.importKey('pkcs8', pkcs8Der(ca.key), EC_KEY, false, ['sign']);
  const keys = await newKeyPair();
  const notAfter = Math.min(now.getTime() + (options.validDays ?? 365) * DAY_MS, authority.notAfter.getTime());
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: randomSerial(),
      subject: `CN=${escapeName(hosts[0])}`,
      issuer: authority.subject,
      notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
      notAfter: new Date(notAfter),
      publicKey: keys.publicKey,
      signingKey,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        // ECDSA keys sign the handshake; they encipher nothing, so keyEncipherment does not apply.
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
        new x509.SubjectAlternativeNameExtension(
          hosts.map((host) => ({ type: isIP(host) ? ('ip' as const) : ('dns' as const), value: host })),
          false,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
        await x509.AuthorityKeyIdentifierExtension.create(authority.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey) };
}

/** `[::1]` (as in a URL) is the address `::1`. */
export function bareHost(host: string): string {
  return host.replace(/^\[(.*)\]$/, '$1');
}

async function newKeyPair(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(EC_KEY, true, ['sign', 'verify']);
}

async function exportKey(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

function pkcs8Der(pem: string): Buffer {
  return createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
}

/** 16 random bytes, positive and without a leading zero byte (RFC 5280 wants a positive serial of at most 20 bytes). */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return bytes.toString('hex');
}

/** Characters that are special in a distinguished name's string form (RFC 4514). */
function escapeName(value: string): string {
  return value.replace(/[,+"\\<>;=#]/g, (character) => `\\${character}`);
}

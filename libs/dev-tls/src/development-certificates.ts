// The development CA and server certificate a local platform keeps in one private folder: made on
// first use, reused after, and renewed only as far as they no longer fit.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { bareHost, createCertificateAuthority, issueServerCertificate, type PemPair } from './certificates.js';

/** A certificate that ends within this much is renewed, so that a running platform does not see it expire. */
export const RENEW_BEFORE_DAYS = 30;
const DAY_MS = 86_400_000;

export interface DevelopmentCertificates {
  /** The authority's certificate: what a client trusts (`sslrootcert`, `ca`). */
  caCert: string;
  caKey: string;
  /** The server's certificate and key (GATEWAY_TLS_CERT, GATEWAY_TLS_KEY). */
  serverCert: string;
  serverKey: string;
  /** What this call made: the authority (and so a server certificate too), or a server certificate only. */
  created: { authority: boolean; server: boolean };
}

/**
 * Makes `dir` (mode 700) with ca.crt, ca.key, server.crt and server.key (keys mode 600) on first
 * use and reuses them later. The server certificate is re-issued when it is missing, ends within
 * 30 days, does not cover every one of `hosts`, or is not the authority's; everything is made anew
 * when the authority is missing or ends within 30 days.
 */
export async function ensureDevelopmentCertificates(dir: string, hosts: string[], options: { now?: Date } = {}): Promise<DevelopmentCertificates> {
  const now = options.now ?? new Date();
  const paths = {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key'),
  };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);

  let ca = readUsable(paths.caCert, paths.caKey, (cert) => cert.ca && cert.checkIssued(cert) && !endsSoon(cert, now));
  const authority = ca === null;
  if (ca === null) {
    ca = await createCertificateAuthority({ now });
    writePair(paths.caCert, paths.caKey, ca);
  }
  const caCert = new X509Certificate(ca.cert);
  const server = readUsable(paths.serverCert, paths.serverKey, (cert) => cert.checkIssued(caCert) && cert.verify(caCert.publicKey) && !endsSoon(cert, now) && covers(cert, hosts));
  if (server === null) writePair(paths.serverCert, paths.serverKey, await issueServerCertificate(ca, { hosts, now }));
  return { ...paths, created: { authority, server: server === null } };
}

/** The pair in these files when both are there, belong together and pass `fits`; else null. */
function readUsable(certPath: string, keyPath: string, fits: (cert: X509Certificate) => boolean): PemPair | null {
  if (!existsSync(certPath) || !existsSync(keyPath)) return null;
  try {
    const pair = { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
    const cert = new X509Certificate(pair.cert);
    return cert.checkPrivateKey(createPrivateKey(pair.key)) && fits(cert) ? pair : null;
  } catch {
    // Unreadable or not PEM: made anew like a missing one.
    return null;
  }
}

function endsSoon(cert: X509Certificate, now: Date): boolean {
  return cert.validToDate.getTime() - now.getTime() < RENEW_BEFORE_DAYS * DAY_MS;
}

function covers(cert: X509Certificate, hosts: string[]): boolean {
  return hosts.map(bareHost).every((host) => (isIP(host) ? cert.checkIP(host) : cert.checkHost(host)) !== undefined);
}

/** Key first, then certificate, each written whole under a temporary name: a stop halfway leaves a pair that fails the checks, never a torn file. */
function writePair(certPath: string, keyPath: string, pair: PemPair): void {
  writeWhole(keyPath, pair.key, 0o600);
  writeWhole(certPath, pair.cert, 0o644);
}

function writeWhole(path: string, content: string, mode: number): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content, { mode });
  chmodSync(temporary, mode);
  renameSync(temporary, path);
}

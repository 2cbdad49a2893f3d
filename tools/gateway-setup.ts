// The PostgreSQL gateway under `npm start`: the certificate it answers TLS with (a development one
// in `.data/tls` unless the user brings their own) and the admin address the start waits on.
import { DEFAULT_GATEWAY_ADMIN_PORT, readPort, readString, type Env } from '@platform/config';
import { bareHost, ensureDevelopmentCertificates } from '@platform/dev-tls';
import { tlsDir } from './local-state.js';

/** Names every local client may use for the gateway, whatever its public address. */
const LOCAL_HOSTS = ['localhost', '127.0.0.1', '::1'];

export interface GatewayTls {
  /** The apps' environment, with GATEWAY_TLS_CERT and GATEWAY_TLS_KEY. */
  env: Env;
  /** The development CA's certificate clients trust; null when GATEWAY_TLS_CERT is the user's. */
  caCert: string | null;
  /** Whether this start made a new development CA (clients must trust the new one). */
  madeAuthority: boolean;
}

/**
 * Unless GATEWAY_TLS_CERT is set, ensures a development CA and a server certificate for the local
 * names and the hosts of the given public URLs (the gateway's, and the apps' when they serve
 * https too), and points the gateway at them.
 */
export async function provideGatewayTls(env: Env, publicUrls: string[]): Promise<GatewayTls> {
  if (env.GATEWAY_TLS_CERT) return { env, caCert: null, madeAuthority: false };
  const hosts = [...new Set([...LOCAL_HOSTS, ...publicUrls.map((url) => bareHost(new URL(url).hostname))])];
  const made = await ensureDevelopmentCertificates(tlsDir(env), hosts);
  return {
    env: { ...env, GATEWAY_TLS_CERT: made.serverCert, GATEWAY_TLS_KEY: made.serverKey },
    caCert: made.caCert,
    madeAuthority: made.created.authority,
  };
}

/**
 * Where the start reaches the gateway's /healthz: over loopback, like the other apps, unless the
 * admin listener was put on one other address (a wildcard address includes loopback).
 */
export function gatewayAdminUrl(env: Env): string {
  const host = readString(env, 'GATEWAY_ADMIN_HOST', '127.0.0.1');
  const reachable = ['0.0.0.0', '::', 'localhost'].includes(host) ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${readPort(env, 'GATEWAY_ADMIN_PORT', DEFAULT_GATEWAY_ADMIN_PORT)}`;
}

/**
 * PLATFORM_HTTPS=true: apps/api and apps/oauth serve https with the development certificate the
 * gateway uses (unless their own API_TLS_* / OAUTH_TLS_* are set). Answers the environment, and the
 * CA clients must trust (null when the certificates are the user's).
 */
export function provideAppsHttps(env: Env, gateway: GatewayTls): { env: Env; caCert: string | null } {
  const serverCert = env.GATEWAY_TLS_CERT;
  const serverKey = env.GATEWAY_TLS_KEY;
  if (!serverCert || !serverKey) throw new Error('PLATFORM_HTTPS needs the gateway\'s certificate');
  return {
    env: {
      ...env,
      API_TLS_CERT: env.API_TLS_CERT ?? serverCert,
      API_TLS_KEY: env.API_TLS_KEY ?? serverKey,
      OAUTH_TLS_CERT: env.OAUTH_TLS_CERT ?? serverCert,
      OAUTH_TLS_KEY: env.OAUTH_TLS_KEY ?? serverKey,
    },
    caCert: env.API_TLS_CERT ? null : gateway.caCert,
  };
}

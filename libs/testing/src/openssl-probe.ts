import { spawn } from 'node:child_process';

export interface TlsProbe {
  /** Whether a handshake finished. */
  connected: boolean;
  /** The protocol and cipher agreed on, as OpenSSL names them ('' when none). */
  protocol: string;
  cipher: string;
}

/**
 * One handshake with OpenSSL's own client (not Node's, so the server's policy is seen by a client
 * that offers what it is told): `args` such as `['-tls1_2', '-cipher', 'AES256-SHA']`;
 * `starttls: 'postgres'` sends PostgreSQL's SSLRequest first.
 */
export async function probeTls(host: string, port: number, args: string[], options: { starttls?: 'postgres' } = {}): Promise<TlsProbe> {
  const child = spawn('openssl', ['s_client', '-connect', `${host}:${port}`, '-brief', ...(options.starttls ? ['-starttls', options.starttls] : []), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
  // Closing stdin ends the session right after the handshake.
  child.stdin.end();
  const status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const protocol = /Protocol version: (\S+)/.exec(output)?.[1] ?? '';
  const cipher = /Ciphersuite: (\S+)/.exec(output)?.[1] ?? '';
  return { connected: status === 0 && cipher !== '', protocol, cipher };
}

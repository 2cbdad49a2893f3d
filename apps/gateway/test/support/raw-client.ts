import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';

/**
 * A PostgreSQL client over a raw socket, for the tests of bad input: it sends exactly the bytes a
 * test wants, and reads the gateway's answers as messages (a type byte, an Int32 length, a body).
 */
export class RawConnection {
  private buffer: Buffer = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  /** Bytes received in all. */
  received = 0;
  readonly closed: Promise<void>;
  isClosed = false;

  constructor(readonly socket: net.Socket | tls.TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    socket.on('error', () => {});
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.isClosed = true;
        this.wake();
        resolve();
      }),
    );
  }

  /**
   * `allowHalfOpen`: when the gateway ends its side, keep this one open (a stubborn client).
   * `localAddress`: another loopback address (127.0.0.2...) stands for another client machine.
   */
  static async open(port: number, options: { allowHalfOpen?: boolean; localAddress?: string; host?: string } = {}): Promise<RawConnection> {
    const socket = net.connect({ host: options.host ?? '127.0.0.1', port, allowHalfOpen: options.allowHalfOpen ?? false, localAddress: options.localAddress });
    await once(socket, 'connect');
    return new RawConnection(socket);
  }

  /** SSLRequest, the gateway's S, then TLS verified against `ca` for `localhost`. */
  static async openTls(port: number, ca: string, options: { allowHalfOpen?: boolean; localAddress?: string } = {}): Promise<RawConnection> {
    const plain = await RawConnection.open(port, options);
    plain.socket.write(int32s(8, 80877103));
    const answer = await plain.bytes(1);
    if (answer.toString('latin1') !== 'S') throw new Error(`SSLRequest answered ${answer.toString('latin1')}`);
    plain.socket.removeAllListeners('data');
    const secure = tls.connect({ socket: plain.socket, ca, servername: 'localhost' });
    await once(secure, 'secureConnect');
    return new RawConnection(secure);
  }

  /** TLS from the first byte (PostgreSQL 17's direct TLS), offering `alpn` (none: no ALPN extension), verified against `ca` for `localhost`. */
  static async openDirectTls(port: number, ca: string, alpn: string[] | null = ['postgresql']): Promise<RawConnection> {
    const secure = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ...(alpn ? { ALPNProtocols: alpn } : {}) });
    const failed = once(secure, 'error').then(([error]) => Promise.reject(error as Error));
    await Promise.race([once(secure, 'secureConnect'), failed]);
    failed.catch(() => {});
    return new RawConnection(secure);
  }

  write(bytes: Buffer): boolean {
    return this.socket.write(bytes);
  }

  /** Exactly `count` bytes, or an error once the connection closes first. */
  async bytes(count: number): Promise<Buffer> {
    while (this.buffer.length < count) await this.wait();
    const taken = this.buffer.subarray(0, count);
    this.buffer = this.buffer.subarray(count);
    return taken;
  }

  async message(): Promise<{ type: string; body: Buffer }> {
    const head = await this.bytes(5);
    const body = await this.bytes(head.readInt32BE(1) - 4);
    return { type: head.toString('latin1', 0, 1), body };
  }

  /** Messages until one of `type` (included); ErrorResponses are thrown as errors unless awaited. */
  async until(type: string): Promise<{ type: string; body: Buffer }[]> {
    const seen: { type: string; body: Buffer }[] = [];
    for (;;) {
      const next = await this.message();
      seen.push(next);
      if (next.type === type) return seen;
      if (next.type === 'E') throw Object.assign(new Error(errorFields(next.body).M), { fields: errorFields(next.body) });
    }
  }

  /** The next ErrorResponse's fields (after skipping other messages), then the close that follows. */
  async fatalError(): Promise<Record<string, string>> {
    for (;;) {
      const next = await this.message();
      if (next.type === 'E') {
        await this.closed;
        return errorFields(next.body);
      }
    }
  }

  /**
   * Logs in as `user` with SCRAM-SHA-256 (and more startup parameters if given, and the protocol
   * `version`, 3.0 by default) and waits for ReadyForQuery. Answers the messages before the
   * authentication request (NegotiateProtocolVersion) and those after AuthenticationOk.
   */
  async login(user: string, database: string, password: string, parameters: Record<string, string> = {}, version = 0x0003_0000): Promise<{ type: string; body: Buffer }[]> {
    this.write(startupPacket({ user, database, ...parameters }, version));
    const before: { type: string; body: Buffer }[] = [];
    let sasl = await this.message();
    while (sasl.type === 'v') {
      before.push(sasl);
      sasl = await this.message();
    }
    if (sasl.type !== 'R' || sasl.body.readInt32BE(0) !== 10) throw new Error(`expected AuthenticationSASL, got ${sasl.type}`);
    const clientNonce = randomBytes(18).toString('base64');
    const firstBare = `n=*,r=${clientNonce}`;
    const first = Buffer.from(`n,,${firstBare}`);
    this.write(frontendMessage('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), int32s(first.length), first])));
    const serverFirst = await this.message();
    if (serverFirst.type !== 'R' || serverFirst.body.readInt32BE(0) !== 11) throw new Error('expected AuthenticationSASLContinue');
    const serverFirstText = serverFirst.body.toString('utf8', 4);
    const fields = Object.fromEntries(serverFirstText.split(',').map((part) => [part[0], part.slice(2)]));
    const salted = pbkdf2Sync(password, Buffer.from(fields.s, 'base64'), Number(fields.i), 32, 'sha256');
    const clientKey = createHmac('sha256', salted).update('Client Key').digest();
    const storedKey = createHash('sha256').update(clientKey).digest();
    const finalWithoutProof = `c=biws,r=${fields.r}`;
    const signature = createHmac('sha256', storedKey).update(`${firstBare},${serverFirstText},${finalWithoutProof}`).digest();
    const proof = Buffer.from(clientKey.map((byte, i) => byte ^ signature[i]));
    this.write(frontendMessage('p', Buffer.from(`${finalWithoutProof},p=${proof.toString('base64')}`)));
    const after = await this.until('Z');
    return [...before, ...after.slice(after.findIndex((message) => message.type === 'R' && message.body.readInt32BE(0) === 0) + 1)];
  }

  /** A simple query's rows, each column as text (null for NULL); an ErrorResponse is thrown. */
  async query(sql: string): Promise<(string | null)[][]> {
    this.write(simpleQuery(sql));
    const rows: (string | null)[][] = [];
    for (const { type, body } of await this.until('Z')) {
      if (type !== 'D') continue;
      const row: (string | null)[] = [];
      let offset = 2;
      for (let column = 0; column < body.readInt16BE(0); column++) {
        const length = body.readInt32BE(offset);
        offset += 4;
        row.push(length < 0 ? null : body.toString('utf8', offset, offset + length));
        offset += Math.max(length, 0);
      }
      rows.push(row);
    }
    return rows;
  }

  end(): void {
    this.socket.destroy();
  }

  private async wait(): Promise<void> {
    if (this.isClosed) throw new Error('the connection closed');
    await new Promise<void>((resolve) => (this.waiting = resolve));
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.();
  }
}

export function int32s(...values: number[]): Buffer {
  const buffer = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => buffer.writeInt32BE(value, i * 4));
  return buffer;
}

/** A startup packet of protocol `version` (3.0 by default). */
export function startupPacket(parameters: Record<string, string>, version = 0x0003_0000): Buffer {
  const body = Buffer.from(`${Object.entries(parameters).map(([name, value]) => `${name}\0${value}\0`).join('')}\0`);
  return Buffer.concat([int32s(body.length + 8, version), body]);
}

/** A CancelRequest for `processId` with `secretKey` (4 bytes in protocol 3.0, up to 256 in 3.2). */
export function cancelRequest(processId: number, secretKey: Buffer): Buffer {
  return Buffer.concat([int32s(12 + secretKey.length, 80877102, processId), secretKey]);
}

export function frontendMessage(type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(type, 'latin1'), int32s(body.length + 4), body]);
}

export function simpleQuery(sql: string): Buffer {
  return frontendMessage('Q', Buffer.from(`${sql}\0`));
}

/** An ErrorResponse's fields by their one-letter codes (S, C, M, H...). */
export function errorFields(body: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const part of body.toString('utf8').split('\0')) if (part) fields[part[0]] = part.slice(1);
  return fields;
}

/**
 * SASLInitialResponse choosing SCRAM-SHA-256 with `data` (a client-first-message); null sends no
 * initial response (length -1), and `trailing` adds bytes after the data that its length leaves out.
 */
export function saslInitialResponse(data: string | null, trailing: Buffer = Buffer.alloc(0)): Buffer {
  const bytes = Buffer.from(data ?? '');
  return frontendMessage('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), int32s(data === null ? -1 : bytes.length), bytes, trailing]));
}

/** SASLResponse carrying `data` (a client-final-message). */
export function saslResponse(data: string): Buffer {
  return frontendMessage('p', Buffer.from(data));
}

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server } from '@niledatabase/server';

/**
 * An app built on the family's server SDK, as a Next.js app mounts it: every request under its
 * `/api` prefix goes to the SDK's route handlers (`nile.handlers`), unmodified, which forward it
 * to the platform's family auth API. Listens on 127.0.0.1:`port` (the origin the app's SDK names).
 */
export interface SdkApp {
  origin: string;
  close(): Promise<void>;
}

async function bodyOf(incoming: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function serve(nile: Server, origin: string, pages: Record<string, string>, incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
  const page = pages[new URL(incoming.url ?? '/', origin).pathname];
  if (page !== undefined) {
    outgoing.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(page);
    return;
  }
  const method = (incoming.method ?? 'GET') as 'GET' | 'POST' | 'PUT' | 'DELETE';
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (typeof value === 'string') headers.set(name, value);
  }
  const body = method === 'GET' || method === 'DELETE' ? undefined : await bodyOf(incoming);
  const request = new Request(`${origin}${incoming.url}`, { method, headers, body });
  const answer = (await nile.handlers[method](request)) as Response;
  const setCookies = answer.headers.getSetCookie();
  for (const [name, value] of answer.headers) {
    if (!['set-cookie', 'content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)) outgoing.setHeader(name, value);
  }
  if (setCookies.length > 0) outgoing.setHeader('set-cookie', setCookies);
  outgoing.statusCode = answer.status;
  outgoing.end(Buffer.from(await answer.arrayBuffer()));
}

/** `pages`: the app's own HTML pages by path (a browser's sign-in page, its landing page). */
export async function startSdkApp(nile: Server, port: number, pages: Record<string, string> = {}): Promise<SdkApp> {
  const origin = `http://127.0.0.1:${port}`;
  const server = createServer((incoming, outgoing) => {
    serve(nile, origin, pages, incoming, outgoing).catch((error: unknown) => {
      outgoing.statusCode = 599;
      outgoing.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    origin,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** A browser's cookies for one site: what Set-Cookie answers put there, sent back as one header. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(response: { headers: Headers }): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      if (attributes.some((attribute) => attribute.toLowerCase() === 'max-age=0')) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(at + 1));
    }
  }

  set(name: string, value: string): void {
    this.cookies.set(name, value);
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

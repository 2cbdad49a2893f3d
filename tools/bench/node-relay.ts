// The floor for any PostgreSQL proxy written for Node: a bare TCP relay, run as its own process by
// bench:gateway (`node --import tsx tools/bench/node-relay.ts <listen port> <host> <port>`). It
// passes bytes both ways with backpressure, as the gateway's session relay does, and nothing else:
// no TLS, no startup routing, no authentication, no framing or counting. Whatever the gateway costs
// above this is ours to cut; what this costs above PgBouncer is Node's (its streams, libuv, V8).
import net from 'node:net';

const [listenPort, host, port] = process.argv.slice(2);

const server = net.createServer({ noDelay: true }, (client) => {
  const backend = net.connect({ host, port: Number(port), noDelay: true });
  const close = () => {
    client.destroy();
    backend.destroy();
  };
  client.on('data', (chunk: Buffer) => {
    if (!backend.write(chunk)) client.pause();
  });
  backend.on('data', (chunk: Buffer) => {
    if (!client.write(chunk)) backend.pause();
  });
  backend.on('drain', () => client.resume());
  client.on('drain', () => backend.resume());
  for (const socket of [client, backend]) {
    socket.on('error', close);
    socket.on('close', close);
  }
});
server.listen(Number(listenPort), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));

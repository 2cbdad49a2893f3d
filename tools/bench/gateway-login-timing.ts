// `npm run bench:gateway-login-timing`: can a client tell a credential's name from an unknown one
// by the timing of the gateway's SCRAM exchange? Times, over loopback and plain connections, each
// step of interleaved failed logins (a wrong password) for a real role of a real PostgreSQL and for
// an unknown name of the same shape: the startup packet to the challenge, the client's first
// message to the server-first-message, the final message to the refusal. Prints medians and p90.
// Runs PostgresGateway in this process (routes answered from memory) against its own embedded
// PostgreSQL (or DATABASE_URL's server); stops by itself.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { PostgresGateway } from '@platform/postgres-gateway';
import { query, startTestPostgres } from '@platform/testing';
import { median, percentile } from './support.js';

const ROUNDS = 200;
const WARMUP = 20;
const ROLE = `cred_${'bench'.padEnd(20, 'a')}`;
const UNKNOWN = `cred_${'bench'.padEnd(20, 'b')}`;
const PHYSICAL = `db_${randomBytes(16).toString('hex')}`;

function frame(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function startup(user: string): Buffer {
  const body = Buffer.from(`user\0${user}\0database\0shop\0\0`);
  const head = Buffer.alloc(8);
  head.writeInt32BE(body.length + 8, 0);
  head.writeInt32BE(196608, 4);
  return Buffer.concat([head, body]);
}

/** One failed login, timed step by step (ms). */
async function timedLogin(port: number, user: string): Promise<[number, number, number]> {
  const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
  await once(socket, 'connect');
  const next = () => once(socket, 'data').then(() => performance.now());
  try {
    let answer = next();
    let sent = performance.now();
    socket.write(startup(user));
    const challenge = (await answer) - sent;
    const data = Buffer.from(`n,,n=,r=${randomBytes(18).toString('base64')}`);
    const length = Buffer.alloc(4);
    length.writeInt32BE(data.length);
    let serverFirst = '';
    answer = once(socket, 'data').then(([chunk]) => ((serverFirst = (chunk as Buffer).toString('utf8', 9)), performance.now()));
    sent = performance.now();
    socket.write(frame('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), length, data])));
    const first = (await answer) - sent;
    const nonce = /r=([^,]+)/.exec(serverFirst)![1];
    answer = next();
    sent = performance.now();
    socket.write(frame('p', Buffer.from(`c=biws,r=${nonce},p=${randomBytes(32).toString('base64')}`)));
    const verdict = (await answer) - sent;
    return [challenge, first, verdict];
  } finally {
    socket.destroy();
  }
}

const postgres = await startTestPostgres();
const gatewayHolder: { gateway?: PostgresGateway } = {};
try {
  await query(postgres.adminUrl, `create database ${PHYSICAL}`);
  await query(postgres.adminUrl, `create role ${ROLE} login password '${randomBytes(16).toString('hex')}'`);
  const url = new URL(postgres.adminUrl);
  const target = { host: url.hostname, port: Number(url.port), index: 1 };
  const route = { credentialId: ROLE, tenantId: null, database: { id: 'bench', name: 'shop', physicalName: PHYSICAL, region: 'AWS_US_WEST_2' as const, status: 'READY' as const } };
  const gateway = new PostgresGateway({
    host: '127.0.0.1',
    port: 0,
    // A control plane that answers at once for both names, so only the gateway's steps differ.
    routes: { find: async (name) => (name === ROLE ? route : null), findInstanceBySlot: async () => null },
    backends: [target],
    allowPlain: true,
    countQueries: false,
    handshakeTimeoutMs: 10_000,
    clientStallMs: 10_000,
    maxConnections: 100,
    mockSaltKey: randomBytes(32),
    log: { info: () => {}, warn: () => {} },
  });
  gatewayHolder.gateway = gateway;
  const { port } = await gateway.listen();
  const samples: Record<'real' | 'unknown', number[][]> = { real: [[], [], []], unknown: [[], [], []] };
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    for (const [kind, user] of [['real', ROLE], ['unknown', UNKNOWN]] as const) {
      const steps = await timedLogin(port, user);
      if (round >= WARMUP) steps.forEach((ms, i) => samples[kind][i].push(ms));
    }
  }
  const show = (values: number[]) => `median ${median(values).toFixed(2)} ms, p90 ${percentile([...values].sort((x, y) => x - y), 90).toFixed(2)} ms`;
  for (const [i, step] of ['startup -> challenge', 'first message -> server-first', 'final message -> refusal'].entries()) {
    console.log(`${step.padEnd(32)} real: ${show(samples.real[i])}   unknown: ${show(samples.unknown[i])}`);
  }
} finally {
  await gatewayHolder.gateway?.close();
  await query(postgres.adminUrl, `drop database if exists ${PHYSICAL}`).catch(() => {});
  await query(postgres.adminUrl, `drop role if exists ${ROLE}`).catch(() => {});
  await postgres.stop();
}

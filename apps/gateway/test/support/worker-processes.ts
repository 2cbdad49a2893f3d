// What the operating system says of the gateway's processes and of the connections each holds:
// the tests of GATEWAY_WORKERS read these rather than take the gateway's word.
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { int32s } from './raw-client.js';

/** The gateway's worker processes: the children of the process the test started (not tsx's esbuild service), zombies included. */
export function workersOf(supervisor: number): number[] {
  let children: string;
  try {
    children = readFileSync(`/proc/${supervisor}/task/${supervisor}/children`, 'utf8');
  } catch {
    return [];
  }
  return children
    .trim()
    .split(/\s+/)
    .map(Number)
    .filter((pid) => pid > 0 && commandOf(pid) !== 'esbuild')
    .sort();
}

function commandOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}

/** Whether `pid` has been reaped by its parent (a zombie still has its /proc entry). */
export function isReaped(pid: number): boolean {
  return !existsSync(`/proc/${pid}`);
}

/** The server side of every connection to `port`: the socket's inode by the client's port, and its state. */
function serverSockets(port: number): { inode: string; clientPort: number; state: string }[] {
  const sockets: { inode: string; clientPort: number; state: string }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      // local address "hex:PORT", remote address, state (01 = ESTABLISHED, 0A = LISTEN), inode in the tenth field
      const fields = line.trim().split(/\s+/);
      if (fields.length > 9 && parseInt(fields[1].split(':')[1], 16) === port) {
        sockets.push({ inode: fields[9], clientPort: parseInt(fields[2].split(':')[1], 16), state: fields[3] });
      }
    }
  }
  return sockets;
}

/** The socket inodes a process holds. */
function socketsOf(pid: number): Set<string> {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/**
 * How many established connections to `port` each process holds; with `anyState`, connections in any
 * state but listening (one its client closed stays in CLOSE_WAIT while the process keeps it).
 */
export function connectionsOn(port: number, pids: number[], anyState = false): number[] {
  const wanted = new Set(serverSockets(port).filter(({ state }) => (anyState ? state !== '0A' : state === '01')).map(({ inode }) => inode));
  return pids.map((pid) => [...socketsOf(pid)].filter((inode) => wanted.has(inode)).length);
}

/** Which of `pids` hold the gateway's side of each client connection to `port`, by the client's own port. */
export function holdersOn(port: number, pids: number[]): Map<number, number[]> {
  const held = pids.map((pid) => ({ pid, inodes: socketsOf(pid) }));
  const holders = new Map<number, number[]>();
  for (const { inode, clientPort, state } of serverSockets(port)) {
    if (state === '0A') continue;
    holders.set(clientPort, held.filter(({ inodes }) => inodes.has(inode)).map(({ pid }) => pid));
  }
  return holders;
}

/** Whether a connection to `port` is refused, or accepted (then closed by this side). */
export function connectOutcome(port: number): Promise<'refused' | 'accepted'> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve('accepted');
    });
    socket.once('error', () => resolve('refused'));
  });
}

/**
 * Opens a connection and sends an SSLRequest: 'answered' when a worker answers it, 'closed' when the
 * connection closes first, 'held' when neither happens within `ms`.
 */
export function sslRequestOutcome(port: number, ms: number): Promise<'answered' | 'closed' | 'held'> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write(int32s(8, 80877103)));
    const settle = (outcome: 'answered' | 'closed' | 'held') => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => settle('held'), ms);
    socket.once('data', () => settle('answered'));
    socket.once('error', () => settle('closed'));
    socket.once('close', () => settle('closed'));
  });
}

/** Sends `name` to `pid`; false when it is gone. */
export function signal(pid: number, name: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

export function isRunning(pid: number): boolean {
  return signal(pid, 0);
}

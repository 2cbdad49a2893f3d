import { randomInt } from 'node:crypto';
import net from 'node:net';

/**
 * Counts logins in progress per key (a client address, a user name) and refuses one more past a
 * cap. PostgreSQL counts a backend against `max_connections` from its start, before the password,
 * so logins that never finish must be bounded before they can hold backends.
 */
export class LoginSlots {
  private readonly held = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Takes a slot: a function that gives it back (once, whatever calls it again), or null when `key` holds `max`. */
  take(key: string): (() => void) | null {
    const count = this.held.get(key) ?? 0;
    if (count >= this.max) return null;
    this.held.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left === 0) this.held.delete(key);
      else this.held.set(key, left);
    };
  }

  /** Keys holding a slot now (a map that empties when logins end, so it cannot grow without bound). */
  get keys(): number {
    return this.held.size;
  }
}

/**
 * The key a client address counts under: an IPv4 address (also when it comes IPv4-mapped), or an
 * IPv6 address's /64, the block one host or one customer network usually gets.
 */
export function addressKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!net.isIPv6(address)) return address;
  const [head, tail = ''] = address.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups] : headGroups;
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, '').toLowerCase()).join(':')}::/64`;
}

/** The steps of a SCRAM exchange that wait on the cluster for a real credential. */
export type AuthStep = 'serverFirst' | 'verdict';

/**
 * How long the cluster took for the recent real logins' steps, so that a failing exchange for an
 * unknown name waits as long as a real one would: without it an unknown name's challenge came
 * back at once while a real one waited for a backend to start, and the difference told which
 * names exist. A wait is drawn from the last `size` real ones (a fallback before there are any).
 */
export class AuthSchedule {
  private readonly seen: Record<AuthStep, number[]> = { serverFirst: [], verdict: [] };
  private readonly next: Record<AuthStep, number> = { serverFirst: 0, verdict: 0 };

  constructor(
    private readonly fallbackMs: Record<AuthStep, number> = { serverFirst: 10, verdict: 1 },
    private readonly size = 64,
  ) {}

  record(step: AuthStep, ms: number): void {
    const seen = this.seen[step];
    if (seen.length < this.size) seen.push(ms);
    else seen[this.next[step]] = ms;
    this.next[step] = (this.next[step] + 1) % this.size;
  }

  delayMs(step: AuthStep): number {
    const seen = this.seen[step];
    return seen.length === 0 ? this.fallbackMs[step] : seen[randomInt(seen.length)];
  }
}

import { isIPv4, isIPv6 } from 'node:net';

/** The eight groups of an IPv6 address written in any of its forms (`::` expanded). */
function ipv6Groups(address: string): string[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groupsOf = (part: string | undefined) => (part ? part.split(':') : []);
  if (tail === undefined) return groupsOf(head);
  const missing = 8 - groupsOf(head).length - groupsOf(tail).length;
  return [...groupsOf(head), ...Array<string>(missing).fill('0'), ...groupsOf(tail)];
}

/**
 * The address a client's failures count under. IPv4 as is, also when mapped into IPv6; IPv6 by
 * its /64, since one subscriber is given a whole /64 and could otherwise take a fresh address per
 * guess. Anything else (a Unix socket) as it is.
 */
export function addressKey(address: string): string {
  const plain = address.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain);
  if (mapped && isIPv4(mapped[1])) return mapped[1];
  if (!isIPv6(plain) || plain.includes('.')) return plain;
  const prefix = ipv6Groups(plain.toLowerCase())
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''));
  return `${prefix.join(':')}::/64`;
}

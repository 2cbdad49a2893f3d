import { BlockList, isIP } from 'node:net';

/**
 * Addresses an outbound fetch (an SSO provider's discovery document) must not reach: this machine,
 * private and shared networks, link-local (cloud metadata services live there), multicast and
 * reserved ranges. Loopback is listed apart: a development setting may allow it.
 */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

const INTERNAL = new BlockList();
for (const [network, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  INTERNAL.addSubnet(network, bits, 'ipv4');
}
for (const [network, bits] of [
  // IPv4-compatible (deprecated) and unspecified; IPv4-translated; both embed an IPv4 address.
  ['::', 96],
  ['::ffff:0:0:0', 96],
  // NAT64 (well-known and local-use), Teredo and 6to4 reach IPv4 addresses through a gateway.
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2001::', 32],
  ['2002::', 16],
  // Site-local (deprecated, still routed inside some networks).
  ['fec0::', 10],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  INTERNAL.addSubnet(network, bits, 'ipv6');
}

/** An IPv4 address written inside IPv6 (`::ffff:10.0.0.1`, `::ffff:a00:1`) as the IPv4 address it is. */
function embeddedIpv4(address: string): string | null {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const [high, low] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/**
 * Why an outbound fetch must not reach `address` (this machine, or an internal network), or null
 * when it may. A kind, not a sentence: the caller words the refusal without naming the address,
 * since answering with what a name resolved to would map the inside of the network for whoever asks.
 */
export type RefusedAddress = 'this_machine' | 'internal' | 'not_an_address';

export function refusedAddress(address: string, options: { allowLoopback: boolean }): RefusedAddress | null {
  const plain = embeddedIpv4(address) ?? address.replace(/%.*$/, '');
  const family = isIP(plain);
  if (family === 0) return 'not_an_address';
  const type = family === 6 ? 'ipv6' : 'ipv4';
  if (LOOPBACK.check(plain, type)) return options.allowLoopback ? null : 'this_machine';
  if (INTERNAL.check(plain, type)) return 'internal';
  return null;
}

/** Whether every address is loopback (plain http is allowed only there, and only in development). */
export function allLoopback(addresses: readonly string[]): boolean {
  return addresses.every((address) => {
    const plain = embeddedIpv4(address) ?? address;
    return LOOPBACK.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  });
}

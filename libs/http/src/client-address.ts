import { BlockList, isIP } from 'node:net';

/** An IPv4 address mapped into IPv6 (`::ffff:192.0.2.1`) as the IPv4 address it is. */
function unmapped(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1] : address;
}

/**
 * The proxies whose X-Forwarded-For is believed: addresses and CIDR ranges, as TRUSTED_PROXIES
 * lists them (already checked by the configuration).
 */
export function trustedProxyList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return list;
}

function isTrusted(proxies: BlockList, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && proxies.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * The client a request comes from. The socket's peer, unless that peer is a trusted proxy: then
 * X-Forwarded-For is read from the right (the hop nearest us), skipping trusted proxies, and the
 * first address that is not one is the client; a client cannot forge an entry to the right of
 * what its own proxy appended. An entry that is no address stops the walk at the last trusted hop.
 */
export function clientAddressOf(peer: string, forwardedFor: string | undefined, proxies: BlockList | undefined): string {
  let client = unmapped(peer);
  if (!proxies || !forwardedFor || !isTrusted(proxies, client)) return client;
  const hops = forwardedFor
    .split(',')
    .map((hop) => unmapped(hop.trim()))
    .reverse();
  for (const hop of hops) {
    if (isIP(hop) === 0) return client;
    client = hop;
    if (!isTrusted(proxies, hop)) return hop;
  }
  return client;
}

/** A path prefix as a proxy sends it: segments of unreserved characters, no dot segments. */
const PREFIX = /^(\/(?!\.\.?(\/|$))[A-Za-z0-9._~-]+)+$/;

/**
 * The path a prefix-stripping proxy took off before passing the request on (X-Forwarded-Prefix, as
 * Traefik's StripPrefix and Spring read it), believed only from a trusted proxy and only when it is
 * a plain path; '' otherwise. The addresses this app hands out (Location, Link) get it back in front.
 */
export function forwardedPrefixOf(peer: string, forwardedPrefix: string | undefined, proxies: BlockList | undefined): string {
  if (!proxies || !forwardedPrefix || !isTrusted(proxies, unmapped(peer))) return '';
  const prefix = forwardedPrefix.trim().replace(/\/+$/, '');
  return prefix.length <= 200 && PREFIX.test(prefix) ? prefix : '';
}

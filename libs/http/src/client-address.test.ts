import { expect } from 'chai';
import { clientAddressOf, trustedProxyList } from './client-address.js';

describe('clientAddressOf', function () {
  const proxies = trustedProxyList(['10.0.0.0/8', '192.0.2.10', '2001:db8::/32']);
  const cases: [string, string, string | undefined, string][] = [
    ['no proxy is trusted: the peer, whatever it forwards', '198.51.100.1', '203.0.113.5', '198.51.100.1'],
    ['an untrusted peer: its forwarded header is ignored', '198.51.100.1', '203.0.113.5', '198.51.100.1'],
    ['a trusted peer without the header: the peer', '10.1.2.3', undefined, '10.1.2.3'],
    ['a trusted peer: the client it forwards', '10.1.2.3', '203.0.113.5', '203.0.113.5'],
    ['a trusted peer mapped into IPv6', '::ffff:10.1.2.3', '203.0.113.5', '203.0.113.5'],
    ['a chain of trusted proxies: the first untrusted from the right', '10.1.2.3', '203.0.113.5, 192.0.2.10, 10.9.9.9', '203.0.113.5'],
    ['a forged entry to the left of the real client is never reached', '10.1.2.3', '127.0.0.1, 203.0.113.5', '203.0.113.5'],
    ['only trusted proxies in the chain: the leftmost of them', '10.1.2.3', '10.4.4.4, 10.5.5.5', '10.4.4.4'],
    ['an entry that is no address: the last trusted hop', '10.1.2.3', '203.0.113.5, unknown', '10.1.2.3'],
    ['an IPv6 proxy range and client', '2001:db8::7', '2001:db9::1', '2001:db9::1'],
    ['an empty header', '10.1.2.3', '', '10.1.2.3'],
  ];
  for (const [what, peer, forwardedFor, client] of cases) {
    it(`${what}: ${client}`, function () {
      const trusted = what.startsWith('no proxy') ? undefined : proxies;
      expect(clientAddressOf(peer, forwardedFor, trusted)).to.equal(client);
    });
  }
});

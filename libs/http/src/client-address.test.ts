import { expect } from 'chai';
import { clientAddressOf, forwardedPrefixOf, trustedProxyList } from './client-address.js';

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

describe('forwardedPrefixOf', function () {
  const proxies = trustedProxyList(['10.0.0.0/8']);
  const cases: [string, string, string | undefined, string][] = [
    ['a trusted proxy’s prefix', '10.1.2.3', '/platform/api', '/platform/api'],
    ['its trailing slash is dropped', '10.1.2.3', '/platform/', '/platform'],
    ['an untrusted peer’s prefix is ignored', '198.51.100.1', '/platform', ''],
    ['no header', '10.1.2.3', undefined, ''],
    ['a prefix that is not a path', '10.1.2.3', 'platform', ''],
    ['a dot segment', '10.1.2.3', '/a/../b', ''],
    ['a percent escape', '10.1.2.3', '/a%2f..', ''],
    ['another host', '10.1.2.3', '//evil.example', ''],
    ['a header break', '10.1.2.3', '/a\r\nSet-Cookie: x=1', ''],
  ];
  for (const [what, peer, header, prefix] of cases) {
    it(`${what}: '${prefix}'`, function () {
      expect(forwardedPrefixOf(peer, header, proxies)).to.equal(prefix);
    });
  }
  it('believes no one when no proxy is trusted', function () {
    expect(forwardedPrefixOf('10.1.2.3', '/platform', undefined)).to.equal('');
  });
});

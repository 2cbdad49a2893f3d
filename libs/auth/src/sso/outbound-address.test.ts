import { expect } from 'chai';
import { refusedAddress } from './outbound-address.js';

describe('refusedAddress', function () {
  const cases: [string, boolean, string | null][] = [
    ['93.184.216.34', false, null],
    ['2606:2800:220:1:248:1893:25c8:1946', false, null],
    ['127.0.0.1', false, '127.0.0.1 is this machine (loopback)'],
    ['127.0.0.1', true, null],
    ['::1', false, '::1 is this machine (loopback)'],
    ['::ffff:127.0.0.1', false, '::ffff:127.0.0.1 is this machine (loopback)'],
    ['::ffff:7f00:1', false, '::ffff:7f00:1 is this machine (loopback)'],
    ['169.254.169.254', true, '169.254.169.254 is a private, link-local or reserved address'],
    ['10.1.2.3', false, '10.1.2.3 is a private, link-local or reserved address'],
    ['172.20.0.1', false, '172.20.0.1 is a private, link-local or reserved address'],
    ['192.168.1.1', true, '192.168.1.1 is a private, link-local or reserved address'],
    ['100.100.100.200', false, '100.100.100.200 is a private, link-local or reserved address'],
    ['0.0.0.0', false, '0.0.0.0 is a private, link-local or reserved address'],
    ['224.0.0.1', false, '224.0.0.1 is a private, link-local or reserved address'],
    ['::ffff:169.254.169.254', false, '::ffff:169.254.169.254 is a private, link-local or reserved address'],
    ['::ffff:a9fe:a9fe', false, '::ffff:a9fe:a9fe is a private, link-local or reserved address'],
    ['fd00:ec2::254', false, 'fd00:ec2::254 is a private, link-local or reserved address'],
    ['fe80::1%eth0', false, 'fe80::1%eth0 is a private, link-local or reserved address'],
    ['::', false, ':: is a private, link-local or reserved address'],
    ['64:ff9b::a9fe:a9fe', false, '64:ff9b::a9fe:a9fe is a private, link-local or reserved address'],
    ['::a9fe:a9fe', false, '::a9fe:a9fe is a private, link-local or reserved address'],
    ['::169.254.169.254', false, '::169.254.169.254 is a private, link-local or reserved address'],
    ['::ffff:0:a9fe:a9fe', false, '::ffff:0:a9fe:a9fe is a private, link-local or reserved address'],
    ['64:ff9b:1::a9fe:a9fe', false, '64:ff9b:1::a9fe:a9fe is a private, link-local or reserved address'],
    ['2002:a9fe:a9fe::1', false, '2002:a9fe:a9fe::1 is a private, link-local or reserved address'],
    ['2001:0:a9fe:a9fe::1', false, '2001:0:a9fe:a9fe::1 is a private, link-local or reserved address'],
    ['fec0::1', false, 'fec0::1 is a private, link-local or reserved address'],
    ['2001:4860:4860::8888', false, null],
    ['metadata.google.internal', false, "'metadata.google.internal' is not an IP address"],
  ];
  for (const [address, allowLoopback, reason] of cases) {
    it(`${address}${allowLoopback ? ' (loopback allowed)' : ''}: ${reason ?? 'may be fetched'}`, function () {
      expect(refusedAddress(address, { allowLoopback })).to.equal(reason);
    });
  }
});

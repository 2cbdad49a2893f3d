import { expect } from 'chai';
import { refusedAddress, type RefusedAddress } from './outbound-address.js';

describe('refusedAddress', function () {
  const cases: [string, boolean, RefusedAddress | null][] = [
    ['93.184.216.34', false, null],
    ['2606:2800:220:1:248:1893:25c8:1946', false, null],
    ['127.0.0.1', false, 'this_machine'],
    ['127.0.0.1', true, null],
    ['::1', false, 'this_machine'],
    ['::ffff:127.0.0.1', false, 'this_machine'],
    ['::ffff:7f00:1', false, 'this_machine'],
    ['169.254.169.254', true, 'internal'],
    ['10.1.2.3', false, 'internal'],
    ['172.20.0.1', false, 'internal'],
    ['192.168.1.1', true, 'internal'],
    ['100.100.100.200', false, 'internal'],
    ['0.0.0.0', false, 'internal'],
    ['224.0.0.1', false, 'internal'],
    ['::ffff:169.254.169.254', false, 'internal'],
    ['::ffff:a9fe:a9fe', false, 'internal'],
    ['fd00:ec2::254', false, 'internal'],
    ['fe80::1%eth0', false, 'internal'],
    ['::', false, 'internal'],
    ['64:ff9b::a9fe:a9fe', false, 'internal'],
    ['::a9fe:a9fe', false, 'internal'],
    ['::169.254.169.254', false, 'internal'],
    ['::ffff:0:a9fe:a9fe', false, 'internal'],
    ['64:ff9b:1::a9fe:a9fe', false, 'internal'],
    ['2002:a9fe:a9fe::1', false, 'internal'],
    ['2001:0:a9fe:a9fe::1', false, 'internal'],
    ['fec0::1', false, 'internal'],
    ['2001:4860:4860::8888', false, null],
    ['metadata.google.internal', false, 'not_an_address'],
  ];
  for (const [address, allowLoopback, reason] of cases) {
    it(`${address}${allowLoopback ? ' (loopback allowed)' : ''}: ${reason ?? 'may be fetched'}`, function () {
      expect(refusedAddress(address, { allowLoopback })).to.equal(reason);
    });
  }
});

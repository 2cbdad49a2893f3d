import { expect } from 'chai';
import {
  CANCEL_REQUEST_CODE,
  PROTOCOL_3_0,
  PROTOCOL_3_2,
  backendKeyData,
  cancelRequest,
  errorResponse,
  negotiateProtocolVersion,
  parseStartupPacket,
  readBackendKeyData,
  startupMessage,
  withoutSourceFields,
} from './protocol.js';
import { ProtocolViolation, refusals } from './refusals.js';

const int32s = (...values: number[]) => Buffer.concat(values.map((value) => Buffer.from([value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff])));

describe('protocol: the messages of versions 3.0 and 3.2 the gateway reads and writes', () => {
  it('writes NegotiateProtocolVersion with the whole version, as PostgreSQL 18 does (0x00030002, never 0)', () => {
    expect(negotiateProtocolVersion(PROTOCOL_3_2, [])).to.deep.equal(Buffer.concat([Buffer.from('v'), int32s(12, 0x0003_0002, 0)]));
    expect(negotiateProtocolVersion(PROTOCOL_3_0, ['_pq_.a', '_pq_.b'])).to.deep.equal(
      Buffer.concat([Buffer.from('v'), int32s(26, 0x0003_0000, 2), Buffer.from('_pq_.a\0_pq_.b\0')]),
    );
  });

  it('reads a startup packet’s whole version, and writes one of the version given', () => {
    for (const version of [PROTOCOL_3_0, PROTOCOL_3_2, 0x0003_0005]) {
      const packet = parseStartupPacket(startupMessage([['user', 'u']], version));
      expect(packet).to.deep.equal({ kind: 'startup', version, parameters: new Map([['user', 'u']]) });
    }
    expect(startupMessage([['user', 'u']]).readInt32BE(4)).to.equal(0x0003_0000);
  });

  it('reads cancel requests with keys of 1 to 256 bytes, and refuses other lengths in PostgreSQL 18’s words', () => {
    for (const length of [1, 4, 32, 35, 256]) {
      const key = Buffer.alloc(length, 7);
      expect(parseStartupPacket(cancelRequest(4242, key))).to.deep.equal({ kind: 'cancel', processId: 4242, secretKey: key });
    }
    expect(cancelRequest(4242, Buffer.from([0, 0, 0, 9]))).to.deep.equal(int32s(16, CANCEL_REQUEST_CODE, 4242, 9));
    const refused = (packet: Buffer) => {
      try {
        parseStartupPacket(packet);
      } catch (error) {
        return error instanceof ProtocolViolation ? error.message : 'not a protocol violation';
      }
      return 'accepted';
    };
    expect(refused(int32s(8, CANCEL_REQUEST_CODE))).to.equal('invalid length of cancel request packet');
    expect(refused(int32s(12, CANCEL_REQUEST_CODE, 4242))).to.equal('invalid length of cancel key in cancel request packet');
    expect(refused(Buffer.concat([int32s(12 + 257, CANCEL_REQUEST_CODE, 4242), Buffer.alloc(257)]))).to.equal('invalid length of cancel key in cancel request packet');
  });

  it('reads and writes BackendKeyData with a 4-byte key (3.0) and a long one (3.2)', () => {
    const short = backendKeyData(4242, Buffer.from([0, 0, 0, 9]));
    expect(short).to.deep.equal(Buffer.concat([Buffer.from('K'), int32s(12, 4242, 9)]));
    const long = Buffer.alloc(32, 0xab);
    const message = backendKeyData(4242, long);
    expect([message.length, message.readInt32BE(1)]).to.deep.equal([1 + 4 + 4 + 32, 40]);
    expect(readBackendKeyData(message)).to.deep.equal({ processId: 4242, secretKey: long });
    expect(readBackendKeyData(short)).to.deep.equal({ processId: 4242, secretKey: Buffer.from([0, 0, 0, 9]) });
    expect(() => readBackendKeyData(Buffer.concat([Buffer.from('K'), int32s(8, 4242)]))).to.throw(/malformed BackendKeyData/);
  });

  it('passes on a backend’s ErrorResponse without the server’s file, line and routine, every other field as it came', () => {
    const fields = ['SFATAL', 'VFATAL', 'C53300', 'Mtoo many connections for role "cred_x"', 'Fpostinit.c', 'L1000', 'RInitPostgres', 'Dsome detail'];
    const body = Buffer.from(`${fields.map((field) => `${field}\0`).join('')}\0`);
    const raw = Buffer.concat([Buffer.from('E'), int32s(body.length + 4), body]);
    expect(withoutSourceFields(raw)).to.deep.equal(
      errorResponse({ severity: 'FATAL', code: '53300', message: 'too many connections for role "cred_x"', detail: 'some detail' }),
    );
    // The gateway's own carry no source fields either.
    const own = errorResponse(refusals.noUserName().fields);
    expect(withoutSourceFields(own)).to.deep.equal(own);
  });
});

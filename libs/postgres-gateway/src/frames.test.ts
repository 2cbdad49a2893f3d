import { expect } from 'chai';
import { FramingError, MessageScanner } from './frames.js';

function message(type: string, body: Buffer | string = ''): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(payload.length + 4, 1);
  return Buffer.concat([head, payload]);
}

function scanAll(chunks: Buffer[]): string[] {
  const seen: string[] = [];
  const scanner = new MessageScanner((type, status) => seen.push(status < 0 ? String.fromCharCode(type) : `${String.fromCharCode(type)}:${String.fromCharCode(status)}`));
  for (const chunk of chunks) scanner.scan(chunk);
  return seen;
}

describe('MessageScanner', () => {
  const stream = Buffer.concat([message('T', Buffer.alloc(40, 1)), message('D', Buffer.alloc(3000, 2)), message('C', 'SELECT 1\0'), message('Z', 'T')]);
  const expected = ['T', 'D', 'C', 'Z:T'];

  it('reports every message of a stream in one chunk, with the transaction status of ReadyForQuery', () => {
    expect(scanAll([stream])).to.deep.equal(expected);
  });

  it('reports the same however the stream is cut, down to one byte per chunk', () => {
    for (const size of [1, 2, 3, 5, 6, 7, 100, 1024]) {
      const chunks: Buffer[] = [];
      for (let offset = 0; offset < stream.length; offset += size) chunks.push(stream.subarray(offset, offset + size));
      expect(scanAll(chunks), `chunks of ${size}`).to.deep.equal(expected);
    }
  });

  it('skips a body larger than any chunk without holding it', () => {
    const big = message('d', Buffer.alloc(1 << 20, 7));
    const chunks = [big.subarray(0, 3), big.subarray(3, 70_000), big.subarray(70_000), message('c')];
    expect(scanAll(chunks)).to.deep.equal(['d', 'c']);
  });

  it('refuses a length below 4, in one chunk or split', () => {
    const bad = Buffer.from([0x51, 0, 0, 0, 3, 0, 0]);
    expect(() => scanAll([bad])).to.throw(FramingError, 'invalid message length 3');
    expect(() => scanAll([bad.subarray(0, 2), bad.subarray(2)])).to.throw(FramingError);
    expect(() => scanAll([Buffer.from([0x51, 0xff, 0xff, 0xff, 0xff, 0])])).to.throw(FramingError, 'invalid message length -1');
  });

  it('reads a ReadyForQuery whose status byte comes in the next chunk', () => {
    const ready = message('Z', 'E');
    expect(scanAll([ready.subarray(0, 5), ready.subarray(5)])).to.deep.equal(['Z:E']);
  });
});

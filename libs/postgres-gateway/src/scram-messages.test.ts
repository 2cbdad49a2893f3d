import { expect } from 'chai';
import { checkClientFinalMessage, decodeBase64, parseClientFirstMessage, readSaslInitialResponse } from './scram-messages.js';

/** The error a check throws: its message, detail and SQLSTATE. */
function refusal(check: () => unknown): { message: string; detail?: string; code: string } {
  try {
    check();
  } catch (error) {
    const { message, detail, code } = error as { message: string; detail?: string; code: string };
    return { message, code, ...(detail === undefined ? {} : { detail }) };
  }
  throw new Error('expected the check to refuse');
}

describe('SCRAM messages, checked by PostgreSQL’s rules', () => {
  const first = parseClientFirstMessage(Buffer.from('n,,n=,r=abc'));
  const proof = Buffer.alloc(32, 7).toString('base64');

  it('decodes base64 as PostgreSQL does: padding required, and a group after padding yields as the padded one did', () => {
    expect(decodeBase64(proof)?.length).to.equal(32);
    expect(decodeBase64(proof.replace(/=$/, ''))).to.equal(null);
    expect(decodeBase64('QQ==')).to.deep.equal(Buffer.from('A'));
    expect(decodeBase64('QQ==QUJD')).to.deep.equal(Buffer.from('AA'));
    expect(decodeBase64('Q===')).to.equal(null);
    expect(decodeBase64('QU JD')).to.equal(null);
    expect(decodeBase64('')).to.deep.equal(Buffer.alloc(0));
  });

  it('takes the SASLInitialResponse’s whole body, and no initial response as null', () => {
    const body = (data: Buffer | null, trailing = '') => {
      const length = Buffer.alloc(4);
      length.writeInt32BE(data === null ? -1 : data.length);
      return Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), length, data ?? Buffer.alloc(0), Buffer.from(trailing)]);
    };
    expect(readSaslInitialResponse(body(Buffer.from('n,,n=,r=x')))?.toString()).to.equal('n,,n=,r=x');
    expect(readSaslInitialResponse(body(null))).to.equal(null);
    expect(refusal(() => readSaslInitialResponse(body(Buffer.from('n,,n=,r=x'), 'z')))).to.deep.equal({ message: 'invalid message format', code: '08P01' });
    expect(refusal(() => readSaslInitialResponse(Buffer.from('SCRAM-SHA-256')))).to.deep.equal({ message: 'invalid string in message', code: '08P01' });
    expect(refusal(() => readSaslInitialResponse(Buffer.from('SCRAM-SHA-256-PLUS\0\0\0\0\0')))).to.include({ message: 'client selected an invalid SASL authentication mechanism' });
    expect(refusal(() => readSaslInitialResponse(Buffer.from('SCRAM-SHA-256\0\0\0')))).to.include({ message: 'insufficient data left in message' });
  });

  it('names the byte it stumbled on as PostgreSQL does', () => {
    expect(refusal(() => parseClientFirstMessage(Buffer.from('x,,n=,r=abc')))).to.deep.include({ detail: 'Unexpected channel-binding flag "\'x\'".' });
    expect(refusal(() => parseClientFirstMessage(Buffer.from('n')))).to.deep.include({ detail: 'Comma expected, but found character "0x00".' });
    expect(refusal(() => parseClientFirstMessage(Buffer.from('n,,r=abc')))).to.deep.include({ detail: 'Expected attribute "n" but found "\'r\'".' });
    expect(refusal(() => parseClientFirstMessage(Buffer.from('n,,n=,r=abc,\xe9=1', 'latin1')))).to.deep.include({ detail: 'Attribute expected, but found invalid character "0xe9".' });
    expect(refusal(() => parseClientFirstMessage(Buffer.from('n,,m=x,n=,r=abc')))).to.deep.equal({ message: 'client requires an unsupported SCRAM extension', code: '0A000' });
  });

  it('checks the final message through before its nonce, and allows a comma at its end', () => {
    expect(() => checkClientFinalMessage(Buffer.from(`c=biws,r=abcdef,e=1,p=${proof},`), first, 'abcdef')).to.not.throw();
    expect(refusal(() => checkClientFinalMessage(Buffer.from('c=biws,r=wrong,p=AAAA'), first, 'abcdef'))).to.include({ detail: 'Malformed proof in client-final-message.' });
    expect(refusal(() => checkClientFinalMessage(Buffer.from(`c=biws,r=wrong,p=${proof}`), first, 'abcdef'))).to.deep.equal({ message: 'invalid SCRAM response', detail: 'Nonce does not match.', code: '08P01' });
    expect(refusal(() => checkClientFinalMessage(Buffer.from(`c=eSws,r=abcdef,p=${proof}`), first, 'abcdef'))).to.include({ message: 'unexpected SCRAM channel-binding attribute in client-final-message' });
  });
});

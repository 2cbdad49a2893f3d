import { expect } from 'chai';
import { OAuthError } from '@platform/domain';
import { requiredParameter, singleParameter, singleValues } from './single-parameters.js';

describe('single parameters', () => {
  it('hands over a field sent once, and refuses one sent twice or too long as invalid_request', () => {
    expect(singleParameter({ scope: 'api:read' }, 'scope')).to.equal('api:read');
    expect(singleParameter({}, 'scope')).to.equal(undefined);
    for (const [value, message] of [
      [['a', 'b'], "'scope' must appear once"],
      ['x'.repeat(4097), "'scope' is too long"],
    ] as const) {
      const error = (() => {
        try {
          singleParameter({ scope: value }, 'scope');
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).to.be.instanceOf(OAuthError);
      expect(error).to.include({ error: 'invalid_request', message });
    }
  });

  it('refuses a required field that is absent or empty', () => {
    expect(requiredParameter({ token: 't' }, 'token')).to.equal('t');
    for (const form of [{}, { token: '' }]) {
      expect(() => requiredParameter(form, 'token')).to.throw(OAuthError, "'token' is required");
    }
  });

  it('treats a repeated or oversized page field as absent', () => {
    expect(singleValues({ a: 'x', b: ['y', 'z'], c: 'w'.repeat(4097) }, ['a', 'b', 'c', 'd'])).to.deep.equal({ a: 'x', b: undefined, c: undefined, d: undefined });
    expect(singleValues(undefined, ['a'])).to.deep.equal({ a: undefined });
  });
});

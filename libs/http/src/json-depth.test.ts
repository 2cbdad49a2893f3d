import { expect } from 'chai';
import { ValidationError } from '@platform/domain';
import { MAX_JSON_DEPTH, assertJsonDepth } from './json-depth.js';

function nested(depth: number): unknown {
  return JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);
}

describe('assertJsonDepth', () => {
  it('accepts values up to the limit, scalars included', () => {
    for (const value of [null, 1, 'x', true, {}, [], { a: [{ b: [1] }] }, nested(MAX_JSON_DEPTH)]) {
      expect(() => assertJsonDepth(value)).not.to.throw();
    }
  });

  it('refuses one level more, in an array or an object, with validation_failed', () => {
    for (const value of [nested(MAX_JSON_DEPTH + 1), { email: nested(MAX_JSON_DEPTH) }]) {
      expect(() => assertJsonDepth(value)).to.throw(ValidationError, `nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
  });

  it('walks 100,000 levels without touching the call stack', () => {
    expect(() => assertJsonDepth({ email: nested(100_000) })).to.throw(ValidationError);
  });
});

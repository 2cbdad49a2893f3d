import { expect } from 'chai';
import {
  ConflictError,
  DomainError,
  ForbiddenError,
  NotFoundError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
} from './errors.js';

describe('domain errors', () => {
  const cases: { error: DomainError; kind: string; code: string; name: string; message: string }[] = [
    { error: new ValidationError('bad_input', 'Bad input'), kind: 'validation', code: 'bad_input', name: 'ValidationError', message: 'Bad input' },
    { error: new ForbiddenError('not_yours', 'Not yours'), kind: 'forbidden', code: 'not_yours', name: 'ForbiddenError', message: 'Not yours' },
    { error: new NotFoundError('thing_not_found', 'No thing'), kind: 'not_found', code: 'thing_not_found', name: 'NotFoundError', message: 'No thing' },
    { error: new ConflictError('taken', 'Taken'), kind: 'conflict', code: 'taken', name: 'ConflictError', message: 'Taken' },
    { error: new UnavailableError('no_region', 'No region'), kind: 'unavailable', code: 'no_region', name: 'UnavailableError', message: 'No region' },
    { error: new DomainError('rate_limited', 'slow_down', 'Slow down'), kind: 'rate_limited', code: 'slow_down', name: 'DomainError', message: 'Slow down' },
  ];

  for (const { error, kind, code, name, message } of cases) {
    it(`${name} carries kind ${kind}, its code, message and name`, () => {
      expect(error).to.be.instanceOf(DomainError);
      expect(error).to.be.instanceOf(Error);
      expect(error.kind).to.equal(kind);
      expect(error.code).to.equal(code);
      expect(error.message).to.equal(message);
      expect(error.name).to.equal(name);
      expect(String(error)).to.equal(`${name}: ${message}`);
    });
  }

  it('UnauthenticatedError takes a code and a message, as its siblings do', () => {
    const error = new UnauthenticatedError('invalid_token', 'Token expired');
    expect(error.kind).to.equal('unauthenticated');
    expect(error.name).to.equal('UnauthenticatedError');
    expect(error.code).to.equal('invalid_token');
    expect(error.message).to.equal('Token expired');
  });

  it('keeps the cause for logs', () => {
    const cause = new Error('socket hang up');
    const error = new UnavailableError('cluster_failed', 'The cluster failed', { cause });
    expect(error.cause).to.equal(cause);
    expect(new ConflictError('taken', 'Taken', { cause: 'x' }).cause).to.equal('x');
    expect(new ValidationError('bad', 'Bad').cause).to.equal(undefined);
  });

  it('subclasses are distinguishable with instanceof', () => {
    const error: DomainError = new NotFoundError('x', 'y');
    expect(error).not.to.be.instanceOf(ConflictError);
    expect(error).not.to.be.instanceOf(ValidationError);
  });
});

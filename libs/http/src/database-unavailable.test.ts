import { expect } from 'chai';
import { DeadlineExceededError } from '@platform/deadline';
import { isDatabaseUnavailable } from './database-unavailable.js';

describe('isDatabaseUnavailable', function () {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  const cases: [string, unknown, boolean][] = [
    ['too many connections (53300)', withCode('53300', 'sorry, too many clients already'), true],
    ['a server starting up (57P03)', withCode('57P03'), true],
    ['an administrator shutdown (57P01)', withCode('57P01'), true],
    ['a connection exception (08006)', withCode('08006'), true],
    ['a refused connection', withCode('ECONNREFUSED'), true],
    ['a MikroORM DriverException carrying the SQLSTATE', Object.assign(new Error('driver'), { sqlState: '53300' }), true],
    ['a wrapped cause', new Error('outer', { cause: withCode('ECONNRESET') }), true],
    ['a connection dropped mid-query', new Error('Connection terminated unexpectedly'), true],
    ['a client whose connect timed out', new Error('timeout expired'), true],
    ['a pool that waited too long', new Error('timeout exceeded when trying to connect'), true],
    ['a server silent past the request deadline', new DeadlineExceededError('a query'), true],
    ['the same, wrapped by the ORM (its fields copied, no cause)', Object.assign(new Error('a query did not finish within the deadline'), { code: 'DEADLINE_EXCEEDED' }), true],
    ['a unique violation', withCode('23505'), false],
    ['a syntax error', withCode('42601'), false],
    ['a missing database (a 404 elsewhere)', withCode('3D000'), false],
    ['a plain bug', new TypeError('x is undefined'), false],
    // A cut connection never goes back to a pool: a client used after it ended is a bug of ours.
    ['a client used after it ended', new Error('Client was closed and is not queryable'), false],
    ['nothing', undefined, false],
  ];
  for (const [what, error, expected] of cases) {
    it(`${what}: ${expected ? 'unavailable' : 'not'}`, function () {
      expect(isDatabaseUnavailable(error)).to.equal(expected);
    });
  }
});

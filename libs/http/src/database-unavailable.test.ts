import { expect } from 'chai';
import { DeadlineExceededError } from '@platform/deadline';
import { databaseUnavailability, isDatabaseUnavailable, type Unavailability } from './database-unavailable.js';

describe('isDatabaseUnavailable', function () {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  const cases: [string, unknown, Unavailability | null][] = [
    ['no free slot (the server’s words, no SQLSTATE)', new Error('sorry, too many clients already'), 'connection_limit'],
    ['too many connections (53300)', withCode('53300', 'sorry, too many clients already'), 'connection_limit'],
    ['a server starting up (57P03)', withCode('57P03'), 'out_of_reach'],
    ['an administrator shutdown (57P01)', withCode('57P01'), 'out_of_reach'],
    ['a connection exception (08006)', withCode('08006'), 'out_of_reach'],
    ['a refused connection', withCode('ECONNREFUSED'), 'out_of_reach'],
    ['a MikroORM DriverException carrying the SQLSTATE', Object.assign(new Error('driver'), { sqlState: '53300' }), 'connection_limit'],
    ['a wrapped cause', new Error('outer', { cause: withCode('ECONNRESET') }), 'out_of_reach'],
    ['a connection dropped mid-query', new Error('Connection terminated unexpectedly'), 'out_of_reach'],
    ['a client whose connect timed out', new Error('timeout expired'), 'no_answer'],
    ['a pool that waited too long', new Error('timeout exceeded when trying to connect'), 'no_answer'],
    ['a server silent past the request deadline', new DeadlineExceededError('a query'), 'no_answer'],
    ['the same, wrapped by the ORM (its fields copied, no cause)', Object.assign(new Error('a query did not finish within the deadline'), { code: 'DEADLINE_EXCEEDED' }), 'no_answer'],
    ['a unique violation', withCode('23505'), null],
    ['a syntax error', withCode('42601'), null],
    ['a missing database (a 404 elsewhere)', withCode('3D000'), null],
    ['a plain bug', new TypeError('x is undefined'), null],
    // A cut connection never goes back to a pool: a client used after it ended is a bug of ours.
    ['a client used after it ended', new Error('Client was closed and is not queryable'), null],
    ['nothing', undefined, null],
  ];
  for (const [what, error, expected] of cases) {
    it(`${what}: ${expected ?? 'not unavailable'}`, function () {
      expect(databaseUnavailability(error)).to.equal(expected);
      expect(isDatabaseUnavailable(error)).to.equal(expected !== null);
    });
  }
});

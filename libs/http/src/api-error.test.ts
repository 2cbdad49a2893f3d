import { expect } from 'chai';
import { DeadlineExceededError } from '@platform/deadline';
import { StructError, validate, type Struct } from 'superstruct';
import {
  ConflictError,
  DomainError,
  ForbiddenError,
  NotFoundError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
} from '@platform/domain';
import { ApiErrorSchema, describeStructError, toApiError } from './api-error.js';
import { arrayOf, int, nullable, oneOf, optional, record, text, toJsonSchema, uuid } from './schema.js';

function structError(struct: Struct<any, any>, value: unknown): StructError {
  const [error] = validate(value, struct);
  if (!error) throw new Error('expected the value to be invalid');
  return error;
}

describe('describeStructError', () => {
  const body = record({
    name: text({ max: 10, pattern: /^[a-z]+$/, patternMessage: 'must be lower-case letters' }),
    region: oneOf(['AWS_US_WEST_2'] as const),
    size: optional(int()),
    owner: optional(record({ email: text({ max: 20 }) })),
    tags: optional(arrayOf(text({ max: 3 }))),
  });

  it('names a missing field and says it is required', () => {
    expect(describeStructError('body', structError(body, { region: 'AWS_US_WEST_2' }))).to.equal('Invalid request: body.name: is required');
  });

  it('keeps the message short when the client sends an absurdly long key', () => {
    const message = describeStructError('body', structError(body, { name: 'a', region: 'AWS_US_WEST_2', ['k'.repeat(100_000)]: 1 }));
    expect(message).to.match(/unknown field$/);
    expect(message.length).to.be.below(200);
  });

  it('says "unknown field" for an extra key', () => {
    const message = describeStructError('body', structError(body, { name: 'a', region: 'AWS_US_WEST_2', colour: 'red' }));
    expect(message).to.equal('Invalid request: body.colour: unknown field');
  });

  it('names nested paths', () => {
    expect(describeStructError('body', structError(body, { name: 'a', region: 'AWS_US_WEST_2', owner: {} }))).to.equal(
      'Invalid request: body.owner.email: is required',
    );
    expect(describeStructError('body', structError(body, { name: 'a', region: 'AWS_US_WEST_2', tags: ['ok', 'long'] }))).to.contain(
      'body.tags.1: ',
    );
  });

  it('reports a wrong type as the expected type', () => {
    const message = describeStructError('body', structError(body, { name: 'a', region: 'AWS_US_WEST_2', size: 'big' }));
    expect(message).to.equal('Invalid request: body.size: expected integer');
  });

  it('uses the location alone for a failure at the root', () => {
    expect(describeStructError('body', structError(body, undefined))).to.equal('Invalid request: body: is required');
    expect(describeStructError('query', structError(body, 'text'))).to.equal('Invalid request: query: expected object');
  });

  it('reports a size failure without the received length', () => {
    const message = describeStructError('body', structError(body, { name: 'abcdefghijk', region: 'AWS_US_WEST_2' }));
    expect(message).to.match(/^Invalid request: body\.name: /);
    expect(message).to.contain('10');
    expect(message).not.to.contain('received');
    expect(message).not.to.contain('abcdefghijk');
  });

  it('reports a pattern failure', () => {
    const message = describeStructError('body', structError(body, { name: 'ABC', region: 'AWS_US_WEST_2' }));
    expect(message).to.equal('Invalid request: body.name: must be lower-case letters');
  });

  it('lists the allowed values of an enum, without the value sent', () => {
    const message = describeStructError('body', structError(body, { name: 'a', region: 'MARS_NORTH_1' }));
    expect(message).to.equal('Invalid request: body.region: must be one of AWS_US_WEST_2');
    const twoRegions = record({ region: nullable(oneOf(['AWS_US_WEST_2', 'AZURE_EASTUS'] as const)) });
    expect(describeStructError('query', structError(twoRegions, { region: 7 }))).to.equal(
      'Invalid request: query.region: must be one of AWS_US_WEST_2, AZURE_EASTUS',
    );
  });

  it('never echoes a 100 kB string, whatever fails on it', () => {
    const huge = 'x'.repeat(100_000);
    const values = [
      { name: huge, region: 'AWS_US_WEST_2' },
      { name: 'a', region: huge },
      { name: 'a', region: 'AWS_US_WEST_2', size: huge },
      { name: 'a', region: 'AWS_US_WEST_2', colour: huge },
      { name: 'a', region: 'AWS_US_WEST_2', tags: [huge] },
    ];
    for (const value of values) {
      const message = describeStructError('body', structError(body, value));
      expect(message.length).to.be.below(300);
      expect(message).not.to.contain('xxxxxxxxxx');
    }
    const id = describeStructError('path', structError(record({ id: uuid() }), { id: huge }));
    expect(id).to.equal('Invalid request: path.id: must be a UUID');
  });

  it('shows at most five failures and counts the rest', () => {
    const message = describeStructError('body', structError(body, { name: 'a', region: 'AWS_US_WEST_2', a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7 }));
    expect(message.split('; ')).to.have.length(6);
    expect(message).to.match(/; and 2 more$/);
  });
});

describe('toApiError', () => {
  it('maps thrown null and undefined to 500 internal_error instead of failing itself', () => {
    for (const thrown of [null, undefined, 'a string', 42]) {
      const mapped = toApiError(thrown);
      expect(mapped.body).to.deep.equal({ errorCode: 'internal_error', message: 'An internal error occurred', statusCode: 500 });
      expect(mapped.expected).to.equal(false);
    }
  });

  const cases: [DomainError, number][] = [
    [new ValidationError('invalid_database_name', 'Bad name'), 400],
    [new UnauthenticatedError('invalid_token', 'Token expired'), 401],
    [new ForbiddenError('forbidden', 'No'), 403],
    [new NotFoundError('workspace_not_found', "Workspace 'x' not found"), 404],
    [new ConflictError('database_name_taken', 'Taken'), 409],
    [new DomainError('rate_limited', 'too_many_requests', 'Slow down'), 429],
    [new UnavailableError('region_unavailable', 'Unavailable'), 503],
  ];

  for (const [error, status] of cases) {
    it(`maps ${error.kind} to ${status} with the error's code and message`, () => {
      expect(toApiError(error)).to.deep.equal({
        body: { errorCode: error.code, message: error.message, statusCode: status },
        expected: true,
      });
    });
  }

  it('says which of out of reach, no answer in time and at its connection limit a 503 is (issue 46)', () => {
    const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
    expect([withCode('ECONNREFUSED'), new DeadlineExceededError('a query'), withCode('53300', 'sorry, too many clients already')].map((error) => toApiError(error))).to.deep.equal([
      {
        body: { errorCode: 'database_unavailable', message: 'A database is out of reach (it refused or lost the connection, or is starting or stopping); try again shortly', statusCode: 503 },
        expected: true,
      },
      {
        body: { errorCode: 'database_unavailable', message: 'A database did not answer in time (within the request’s deadline or the connect timeout); try again shortly', statusCode: 503 },
        expected: true,
      },
      { body: { errorCode: 'database_busy', message: 'A database is at its connection limit; try again shortly', statusCode: 503 }, expected: true },
    ]);
  });

  it('maps an unknown Error to a generic 500 internal_error, flagged as unexpected', () => {
    const mapped = toApiError(new Error('password=hunter2 connection refused'));
    expect(mapped).to.deep.equal({
      body: { errorCode: 'internal_error', message: 'An internal error occurred', statusCode: 500 },
      expected: false,
    });
  });

  it('does not leak the message of an unknown error, or of a 5xx http error', () => {
    expect(toApiError(new TypeError('secret detail')).body.message).not.to.contain('secret');
    const http500 = toApiError({ status: 500, expose: false, message: 'db password wrong' });
    expect(http500.body.statusCode).to.equal(500);
    expect(http500.body.message).not.to.contain('password');
    expect(http500.expected).to.equal(false);
  });

  it('maps a non-Error thrown value to 500', () => {
    expect(toApiError('boom').body.statusCode).to.equal(500);
    expect(toApiError(42).body.errorCode).to.equal('internal_error');
  });

  it('maps a body-parser JSON failure to 400 malformed_json without echoing the parser detail', () => {
    const mapped = toApiError({ status: 400, expose: true, type: 'entity.parse.failed', message: 'Unexpected token } in JSON at position 7' });
    expect(mapped.body.errorCode).to.equal('malformed_json');
    expect(mapped.body.statusCode).to.equal(400);
    expect(mapped.body.message).to.match(/not valid JSON/);
    expect(mapped.body.message).not.to.contain('position');
    expect(mapped.expected).to.equal(true);
  });

  it('maps a too large body to 413 payload_too_large', () => {
    const mapped = toApiError({ status: 413, expose: true, type: 'entity.too.large' });
    expect(mapped.body.statusCode).to.equal(413);
    expect(mapped.body.errorCode).to.equal('payload_too_large');
    expect(mapped.expected).to.equal(true);
  });

  it('maps other exposed 4xx http errors by status', () => {
    const unsupported = toApiError({ status: 415, expose: true, message: 'Unsupported' });
    expect(unsupported.body.errorCode).to.equal('unsupported_content_type');
    expect(unsupported.body.statusCode).to.equal(415);
    expect(unsupported.expected).to.equal(true);
    expect(toApiError({ status: 405, expose: true, message: 'Method Not Allowed' }).body.errorCode).to.equal('method_not_allowed');
    expect(toApiError({ status: 418, expose: true, message: 'teapot' }).body.errorCode).to.equal('bad_request');
    expect(toApiError({ status: 400, expose: true, type: 'encoding.unsupported', message: 'x' }).body.errorCode).to.equal('unsupported_encoding');
  });

  it('truncates the message of an exposed http error', () => {
    const mapped = toApiError({ status: 400, expose: true, message: 'y'.repeat(10_000) });
    expect(mapped.body.message.length).to.be.at.most(300);
  });

  it('maps a 501 from the router to not_implemented', () => {
    const mapped = toApiError({ status: 501, expose: false, message: 'Not Implemented' });
    expect(mapped.body.statusCode).to.equal(501);
    expect(mapped.body.errorCode).to.equal('not_implemented');
    expect(mapped.expected).to.equal(true);
  });

  it('maps a URIError (malformed percent-encoding) to 400 bad_request', () => {
    const mapped = toApiError(new URIError('URI malformed'));
    expect(mapped.body).to.deep.include({ errorCode: 'bad_request', statusCode: 400 });
    expect(mapped.expected).to.equal(true);
  });

  it('produces bodies that satisfy ApiErrorSchema', () => {
    const errors: unknown[] = [new Error('x'), new NotFoundError('a', 'b'), { status: 413, expose: true, type: 'entity.too.large' }];
    for (const error of errors) {
      const [failure] = validate(toApiError(error).body, ApiErrorSchema);
      expect(failure, String(failure)).to.equal(undefined);
    }
    expect(toJsonSchema(ApiErrorSchema).required).to.deep.equal(['errorCode', 'message', 'statusCode']);
  });
});

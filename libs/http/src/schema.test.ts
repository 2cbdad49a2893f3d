import { expect } from 'chai';
import { create, is, string, validate, type Struct } from 'superstruct';
import { arrayOf, bool, dateTime, int, nullable, oneOf, optional, queryBoolean, queryInteger, record, text, toJsonSchema, uuid } from './schema.js';

function accepts(struct: Struct<any, any>, value: unknown): boolean {
  return is(value, struct);
}

describe('http schema builders', () => {
  describe('toJsonSchema', () => {
    it('describes text with its length bounds, pattern and annotations', () => {
      const struct = text({ min: 2, max: 10, pattern: /^[a-z]+$/, patternMessage: 'must be lower-case letters', format: 'slug', description: 'A name', example: 'acme' });
      expect(toJsonSchema(struct)).to.deep.equal({
        type: 'string',
        minLength: 2,
        maxLength: 10,
        pattern: '^[a-z]+$',
        format: 'slug',
        description: 'A name',
        examples: ['acme'],
      });
    });

    it('always includes maxLength and leaves out what was not given', () => {
      expect(toJsonSchema(text({ max: 5 }))).to.deep.equal({ type: 'string', maxLength: 5 });
    });

    it('describes a record: properties, required keys without the optional ones, no additional properties', () => {
      const struct = record(
        {
          name: text({ max: 63 }),
          region: oneOf(['AWS_US_WEST_2', 'AZURE_EASTUS'] as const),
          note: optional(text({ max: 100 })),
          count: optional(int()),
        },
        'A database',
      );
      const schema = toJsonSchema(struct);
      expect(schema.type).to.equal('object');
      expect(schema.additionalProperties).to.equal(false);
      expect(schema.required).to.deep.equal(['name', 'region']);
      expect(schema.description).to.equal('A database');
      expect(schema.properties).to.deep.equal({
        name: { type: 'string', maxLength: 63 },
        region: { type: 'string', enum: ['AWS_US_WEST_2', 'AZURE_EASTUS'] },
        note: { type: 'string', maxLength: 100 },
        count: { type: 'integer' },
      });
    });

    it('describes an empty record with an empty required list', () => {
      expect(toJsonSchema(record({}))).to.deep.equal({ type: 'object', properties: {}, required: [], additionalProperties: false });
    });

    it('describes optional as its inner schema', () => {
      const inner = text({ max: 3 });
      expect(toJsonSchema(optional(inner))).to.deep.equal(toJsonSchema(inner));
    });

    it('describes arrays with their item schema', () => {
      expect(toJsonSchema(arrayOf(text({ max: 4 }), 'Tags'))).to.deep.equal({
        type: 'array',
        items: { type: 'string', maxLength: 4 },
        description: 'Tags',
      });
    });

    it('nests records in arrays', () => {
      const schema = toJsonSchema(arrayOf(record({ id: uuid() })));
      expect(schema.items).to.deep.equal({
        type: 'object',
        properties: { id: { type: 'string', format: 'uuid' } },
        required: ['id'],
        additionalProperties: false,
      });
    });

    it('adds null to the enum of a nullable enum, and never nests type lists', () => {
      expect(toJsonSchema(nullable(oneOf(['a', 'b'] as const)))).to.deep.equal({ type: ['string', 'null'], enum: ['a', 'b', null] });
      expect(toJsonSchema(nullable(nullable(text({ max: 2 }))))).to.deep.equal({ type: ['string', 'null'], maxLength: 2 });
    });

    it('describes nullable with a type list including null', () => {
      expect(toJsonSchema(nullable(text({ max: 8 })))).to.deep.equal({ type: ['string', 'null'], maxLength: 8 });
      expect(toJsonSchema(nullable(dateTime('When')))).to.deep.equal({
        type: ['string', 'null'],
        format: 'date-time',
        description: 'When',
      });
    });

    it('describes oneOf, bool, int, uuid and dateTime', () => {
      expect(toJsonSchema(oneOf(['a', 'b'] as const, 'Pick'))).to.deep.equal({ type: 'string', enum: ['a', 'b'], description: 'Pick' });
      expect(toJsonSchema(bool())).to.deep.equal({ type: 'boolean' });
      expect(toJsonSchema(int('Count'))).to.deep.equal({ type: 'integer', description: 'Count' });
      expect(toJsonSchema(uuid())).to.deep.equal({ type: 'string', format: 'uuid' });
      expect(toJsonSchema(dateTime())).to.deep.equal({ type: 'string', format: 'date-time' });
    });

    it('refuses a struct not built with the builders', () => {
      expect(() => toJsonSchema(string())).to.throw(/was not built with the http schema builders/);
    });
  });

  describe('validation', () => {
    const body = record({
      name: text({ min: 1, max: 10, pattern: /^[a-z_]+$/, patternMessage: 'must be lower-case letters and underscores' }),
      region: oneOf(['AWS_US_WEST_2', 'AZURE_EASTUS'] as const),
      note: optional(nullable(text({ max: 5 }))),
      tags: optional(arrayOf(text({ max: 3 }))),
    });

    it('accepts a valid value, with or without optional keys', () => {
      expect(accepts(body, { name: 'orders', region: 'AZURE_EASTUS' })).to.equal(true);
      expect(accepts(body, { name: 'orders', region: 'AZURE_EASTUS', note: null, tags: ['a', 'bc'] })).to.equal(true);
      expect(accepts(body, { name: 'orders', region: 'AZURE_EASTUS', note: 'hi' })).to.equal(true);
    });

    it('refuses unknown keys', () => {
      expect(accepts(body, { name: 'orders', region: 'AZURE_EASTUS', colour: 'red' })).to.equal(false);
    });

    it('refuses missing required keys', () => {
      expect(accepts(body, { region: 'AZURE_EASTUS' })).to.equal(false);
      expect(accepts(body, { name: 'orders' })).to.equal(false);
    });

    it('enforces text size limits', () => {
      expect(accepts(body, { name: 'a'.repeat(10), region: 'AZURE_EASTUS' })).to.equal(true);
      expect(accepts(body, { name: 'a'.repeat(11), region: 'AZURE_EASTUS' })).to.equal(false);
      expect(accepts(body, { name: '', region: 'AZURE_EASTUS' })).to.equal(false);
      expect(accepts(body, { name: 'a', region: 'AZURE_EASTUS', note: 'toolong' })).to.equal(false);
      expect(accepts(body, { name: 'a', region: 'AZURE_EASTUS', tags: ['abcd'] })).to.equal(false);
    });

    it('enforces the pattern', () => {
      expect(accepts(body, { name: 'Orders', region: 'AZURE_EASTUS' })).to.equal(false);
      expect(accepts(body, { name: 'my-db', region: 'AZURE_EASTUS' })).to.equal(false);
    });

    it('enforces enums and types', () => {
      expect(accepts(body, { name: 'a', region: 'GCP' })).to.equal(false);
      expect(accepts(body, { name: 5, region: 'AZURE_EASTUS' })).to.equal(false);
      expect(accepts(body, null)).to.equal(false);
      expect(accepts(body, ['a'])).to.equal(false);
      expect(accepts(int(), 1.5)).to.equal(false);
      expect(accepts(int(), 2)).to.equal(true);
      expect(accepts(bool(), 'true')).to.equal(false);
    });

    it('nullable accepts null, optional accepts undefined, not the other way round', () => {
      expect(accepts(nullable(text({ max: 3 })), null)).to.equal(true);
      expect(accepts(nullable(text({ max: 3 })), undefined)).to.equal(false);
      expect(accepts(optional(text({ max: 3 })), undefined)).to.equal(true);
      expect(accepts(optional(text({ max: 3 })), null)).to.equal(false);
    });

    it('applies a check with its own message', () => {
      const struct = text({ max: 20, check: { test: (value) => value !== 'postgres', message: 'is reserved' } });
      expect(accepts(struct, 'orders')).to.equal(true);
      const [error] = validate('postgres', struct);
      expect(error?.message).to.equal('is reserved');
      expect(error?.refinement).to.equal('rule');
    });

    it('queryBoolean takes the text true or false as a boolean, and nothing else', () => {
      const struct = queryBoolean('a flag');
      expect(toJsonSchema(struct)).to.deep.equal({ type: 'boolean', description: 'a flag' });
      expect(create('true', struct)).to.equal(true);
      expect(create('false', struct)).to.equal(false);
      for (const value of ['TRUE', '1', 'yes', '', 'true ', ['true']]) expect(() => create(value, struct), String(value)).to.throw();
    });

    it('uuid lower-cases what it accepts on the way in', () => {
      expect(create('0B7E3C1A-5F0E-4C7E-9D7A-1B2C3D4E5F60', uuid())).to.equal('0b7e3c1a-5f0e-4c7e-9d7a-1b2c3d4e5f60');
      expect(() => create(42, uuid())).to.throw('Expected a string, but received: 42');
    });

    it('queryInteger takes digits only, within its bounds, and leaves an absent optional one out', () => {
      const struct = record({ limit: optional(queryInteger({ min: 1, max: 1000 })) });
      expect(create({ limit: '12' }, struct)).to.deep.equal({ limit: 12 });
      expect(create({}, struct)).to.deep.equal({});
      for (const limit of ['1e3', '-1', '0', '1001', '', ' 5', '5.0', ['5']]) expect(() => create({ limit }, struct), String(limit)).to.throw();
    });

    it('uuid with refuseNil refuses the all-zero UUID only', () => {
      const chosen = uuid(undefined, { refuseNil: true });
      expect(accepts(chosen, '00000000-0000-0000-0000-000000000000')).to.equal(false);
      expect(accepts(uuid(), '00000000-0000-0000-0000-000000000000')).to.equal(true);
      expect(accepts(chosen, '00000000-0000-0000-0000-000000000001')).to.equal(true);
    });

    it('uuid accepts UUIDs only', () => {
      expect(accepts(uuid(), '0b7e3c1a-5f0e-4c7e-9d7a-1b2c3d4e5f60')).to.equal(true);
      expect(accepts(uuid(), '0b7e3c1a5f0e4c7e9d7a1b2c3d4e5f60')).to.equal(false);
      expect(accepts(uuid(), 'not-a-uuid')).to.equal(false);
    });
  });
});

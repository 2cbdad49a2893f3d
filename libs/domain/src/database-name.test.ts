import { expect } from 'chai';
import { DATABASE_NAME_MAX_LENGTH, assertDatabaseName, isValidDatabaseName } from './database-name.js';
import { DomainError, ValidationError } from './errors.js';

function thrownBy(fn: () => void): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the function to throw');
}

describe('database names', () => {
  it('allows 63 characters at most', () => {
    expect(DATABASE_NAME_MAX_LENGTH).to.equal(63);
    expect(isValidDatabaseName('a'.repeat(63))).to.equal(true);
    expect(isValidDatabaseName('a'.repeat(64))).to.equal(false);
  });

  it('accepts letters, digits and underscores starting with a letter or underscore', () => {
    for (const name of ['a', 'Z', '_', 'orders', 'Orders_2024', '_private', 'a1_b2_C3', '__']) {
      expect(isValidDatabaseName(name), name).to.equal(true);
    }
  });

  it('refuses the empty name', () => {
    expect(isValidDatabaseName('')).to.equal(false);
  });

  it('refuses a leading digit', () => {
    expect(isValidDatabaseName('1orders')).to.equal(false);
    expect(isValidDatabaseName('0')).to.equal(false);
  });

  it('refuses hyphens, spaces, dots, quotes and other punctuation', () => {
    for (const name of ['my-db', 'my db', 'my.db', 'my"db', "my'db", 'db;drop', 'db$', 'db/1', ' db', 'db ']) {
      expect(isValidDatabaseName(name), name).to.equal(false);
    }
  });

  it('refuses non-ASCII letters', () => {
    for (const name of ['café', 'données', 'база', '数据库', 'db_😀', 'ａｂｃ']) {
      expect(isValidDatabaseName(name), name).to.equal(false);
    }
  });

  it('refuses a trailing newline (the pattern is anchored to the whole string)', () => {
    expect(isValidDatabaseName('orders\n')).to.equal(false);
    expect(isValidDatabaseName('orders\nmore')).to.equal(false);
  });

  it('assertDatabaseName passes valid names silently', () => {
    expect(() => assertDatabaseName('a'.repeat(63))).not.to.throw();
    expect(() => assertDatabaseName('_x1')).not.to.throw();
  });

  it('assertDatabaseName throws a ValidationError with code invalid_database_name', () => {
    for (const name of ['', 'a'.repeat(64), '9lives', 'my-db', 'café']) {
      const error = thrownBy(() => assertDatabaseName(name));
      expect(error, name).to.be.instanceOf(ValidationError);
      expect(error).to.be.instanceOf(DomainError);
      expect(error).to.have.property('kind', 'validation');
      expect(error).to.have.property('code', 'invalid_database_name');
      expect((error as Error).message).to.contain('63');
    }
  });
});

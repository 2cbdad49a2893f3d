import { expect } from 'chai';
import { ConfigError, readDurationSeconds, readEnum, readInteger, readList, readOptionalString, readString, readUrl } from './env.js';

describe('env readers', () => {
  it('ConfigError prefixes the message with the variable', () => {
    const error = new ConfigError('FOO', 'is broken');
    expect(error.message).to.equal('FOO: is broken');
    expect(error.variable).to.equal('FOO');
    expect(error).to.be.instanceOf(Error);
  });

  it('readString trims and falls back on missing or blank values', () => {
    expect(readString({ A: '  x  ' }, 'A', 'd')).to.equal('x');
    expect(readString({ A: '   ' }, 'A', 'd')).to.equal('d');
    expect(readString({}, 'A', 'd')).to.equal('d');
    expect(readOptionalString({ A: '' }, 'A')).to.equal(undefined);
    expect(readOptionalString({ A: ' v ' }, 'A')).to.equal('v');
  });

  it('readInteger accepts whole numbers within the range only', () => {
    const range = { min: 10, max: 20 };
    expect(readInteger({}, 'N', 15, range)).to.equal(15);
    expect(readInteger({ N: '10' }, 'N', 15, range)).to.equal(10);
    expect(readInteger({ N: '20' }, 'N', 15, range)).to.equal(20);
    for (const value of ['9', '21', '1.5', '-10', '12abc', '99999999999999999999999']) {
      expect(() => readInteger({ N: value }, 'N', 15, range), value).to.throw(ConfigError, /^N: /);
    }
  });

  it('readDurationSeconds reads seconds, or a number with a unit, within the range', () => {
    const range = { min: 1, max: 30 * 86_400 };
    expect(readDurationSeconds({}, 'D', 604_800, range)).to.equal(604_800);
    expect(readDurationSeconds({ D: '90' }, 'D', 0, range)).to.equal(90);
    expect(readDurationSeconds({ D: '90s' }, 'D', 0, range)).to.equal(90);
    expect(readDurationSeconds({ D: '15m' }, 'D', 0, range)).to.equal(900);
    expect(readDurationSeconds({ D: '12h' }, 'D', 0, range)).to.equal(43_200);
    expect(readDurationSeconds({ D: ' 7d ' }, 'D', 0, range)).to.equal(604_800);
    for (const value of ['0', '31d', '1.5h', '-1', '7 d', '7days', 'd', '1w', '9999999999']) {
      expect(() => readDurationSeconds({ D: value }, 'D', 60, range), value).to.throw(ConfigError, /^D: /);
    }
  });

  it('readUrl checks the protocol and strips trailing slashes', () => {
    expect(readUrl({ U: 'https://x.example///' }, 'U', undefined, ['https:'])).to.equal('https://x.example');
    expect(readUrl({}, 'U', 'http://fallback', ['http:'])).to.equal('http://fallback');
    expect(() => readUrl({}, 'U', undefined, ['http:'])).to.throw(ConfigError, 'U: is required');
    expect(() => readUrl({ U: 'http://x' }, 'U', undefined, ['https:'])).to.throw(ConfigError, /must use https:/);
  });

  it('readEnum refuses a value outside the list', () => {
    expect(readEnum({ E: 'b' }, 'E', 'a', ['a', 'b'] as const)).to.equal('b');
    expect(readEnum({}, 'E', 'a', ['a', 'b'] as const)).to.equal('a');
    expect(() => readEnum({ E: 'c' }, 'E', 'a', ['a', 'b'] as const)).to.throw(ConfigError, /'c'/);
  });

  it('readList returns a copy of the fallback', () => {
    const fallback = ['a', 'b'] as const;
    const list = readList({}, 'L', fallback, fallback);
    expect(list).to.deep.equal(['a', 'b']);
    list.push('a');
    expect(fallback).to.have.length(2);
  });
});

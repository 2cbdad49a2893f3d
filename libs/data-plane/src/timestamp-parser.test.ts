import { expect } from 'chai';
import pg from 'pg';
import { parseTimestamptz } from './timestamp-parser.js';

const defaultParser = pg.types.getTypeParser(1184, 'text') as (text: string) => Date;

describe('parseTimestamptz', function () {
  it('reads what pg’s own parser reads, to the millisecond', function () {
    const samples = [
      '2026-11-23 04:18:39.123456+00',
      '2026-11-23 04:18:39+00',
      '2026-11-23 04:18:39.1+00',
      '2026-11-23 04:18:39.12-08',
      '1999-12-31 23:59:59.999999+05:30',
      '2024-02-29 00:00:00.000001-03:30',
      '1883-11-18 12:00:00+00:09:21',
      '2000-01-01 00:00:00.5+14',
      '1970-01-01 00:00:00+00',
    ];
    for (const text of samples) expect(parseTimestamptz(text).getTime(), text).to.equal(defaultParser(text).getTime());
  });

  it('agrees with pg’s parser on random instants and offsets', function () {
    for (let i = 0; i < 2000; i++) {
      const at = new Date(Date.UTC(1000 + Math.floor(Math.random() * 8999), 0, 1) + Math.floor(Math.random() * 365 * 86_400_000));
      const iso = at.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
      const micros = String(Math.floor(Math.random() * 1000)).padStart(3, '0');
      const offset = `${Math.random() < 0.5 ? '+' : '-'}${String(Math.floor(Math.random() * 15)).padStart(2, '0')}${Math.random() < 0.3 ? ':30' : ''}`;
      const text = `${iso.slice(0, 10)} ${iso.slice(11, 23)}${micros}${offset}`;
      expect(parseTimestamptz(text).getTime(), text).to.equal(defaultParser(text).getTime());
    }
  });

  it('hands what it does not read to pg’s parser: BC, infinity, long years', function () {
    for (const text of ['0044-03-15 12:00:00+00 BC', 'infinity', '-infinity', '12026-01-01 00:00:00+00', '0999-01-01 00:00:00+00']) {
      const ours = parseTimestamptz(text);
      const theirs = defaultParser(text);
      expect(String(ours.getTime?.() ?? ours), text).to.equal(String(theirs.getTime?.() ?? theirs));
    }
  });
});

import { expect } from 'chai';
import { ValidationError } from '../errors.js';
import { checkWindow, DEFAULT_INSIGHTS_RETENTION, windowOf, type Granularity } from './query-performance.js';

const NOW = new Date('2026-11-22T12:34:56Z');

function refusal(start: Date, end: Date, granularity: Granularity): string | null {
  try {
    checkWindow(start, end, granularity, NOW, DEFAULT_INSIGHTS_RETENTION);
    return null;
  } catch (error) {
    expect(error).to.be.instanceOf(ValidationError);
    return (error as ValidationError).message;
  }
}

describe('checkWindow', () => {
  const minute = (iso: string) => new Date(iso);
  const cases: [string, Date, Date, Granularity, string | null][] = [
    ['an hour of minutes, today', minute('2026-11-22T11:00:00Z'), minute('2026-11-22T12:00:00Z'), '1m', null],
    ['seven days of 5 minutes ending now', minute('2026-11-15T12:34:00Z'), minute('2026-11-22T12:34:00Z'), '5m', null],
    ['minutes from nine days ago', minute('2026-11-13T10:00:00Z'), minute('2026-11-13T11:00:00Z'), '1m', 'start: figures by the minute are kept for 8 days; use 1h or 1d for older ones'],
    ['hours from ten days ago, on a whole hour', minute('2026-11-12T10:00:00Z'), minute('2026-11-13T10:00:00Z'), '1h', null],
    ['hours from ten days ago, off the hour', minute('2026-11-12T10:30:00Z'), minute('2026-11-13T10:30:00Z'), '1h', 'start must be a whole UTC hour for hourly figures older than 8 days'],
    ['hours from a hundred days ago', minute('2026-08-14T00:00:00Z'), minute('2026-08-15T00:00:00Z'), '1h', 'start: figures by the hour are kept for 95 days; use 1d for older ones'],
    ['days from a hundred days ago, on a whole day', minute('2026-08-14T00:00:00Z'), minute('2026-09-14T00:00:00Z'), '1d', null],
    ['days from a hundred days ago, on an hour', minute('2026-08-14T05:00:00Z'), minute('2026-09-14T05:00:00Z'), '1d', 'start must be a whole UTC day for daily figures of that age'],
    ['days from ten days ago, on an hour', minute('2026-11-12T05:00:00Z'), minute('2026-11-20T05:00:00Z'), '1d', null],
    ['days from ten days ago, off the hour', minute('2026-11-12T05:10:00Z'), minute('2026-11-20T05:10:00Z'), '1d', 'start must be a whole UTC hour for daily figures of that age'],
  ];
  for (const [what, start, end, granularity, message] of cases) {
    it(`${what}: ${message ?? 'accepted'}`, () => {
      expect(refusal(start, end, granularity)).to.equal(message);
    });
  }
});

describe('windowOf', () => {
  const at = (iso: string) => new Date(iso);

  it('takes the last hour of whole minutes when neither bound is given', () => {
    expect(windowOf(undefined, undefined, NOW)).to.deep.equal({ start: at('2026-11-22T11:34:00Z'), end: at('2026-11-22T12:34:00Z') });
  });

  it('takes an hour before a given end, and the current whole minute after a given start', () => {
    expect(windowOf(undefined, at('2026-11-22T10:00:00Z'), NOW)).to.deep.equal({ start: at('2026-11-22T09:00:00Z'), end: at('2026-11-22T10:00:00Z') });
    expect(windowOf(at('2026-11-22T12:00:00Z'), undefined, NOW)).to.deep.equal({ start: at('2026-11-22T12:00:00Z'), end: at('2026-11-22T12:34:00Z') });
  });

  it('keeps both bounds when both are given', () => {
    const window = { start: at('2026-11-20T00:00:00Z'), end: at('2026-11-21T00:00:00Z') };
    expect(windowOf(window.start, window.end, NOW)).to.deep.equal(window);
  });
});

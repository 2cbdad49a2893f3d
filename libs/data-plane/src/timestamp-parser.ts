import pg from 'pg';

const TIMESTAMPTZ_OID = 1184;
const defaultParser = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => Date;

/** The digits of `text` from `at`, `length` of them, as a number; NaN if any is not a digit. */
function digits(text: string, at: number, length: number): number {
  let value = 0;
  for (let i = at; i < at + length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return NaN;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * A timestamptz as PostgreSQL writes it under DateStyle ISO, `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]]`,
 * read with arithmetic on character codes: pg's default parser (a regular expression and several
 * Date calls) was a tenth of the API's CPU time on a page of 1,000 rows. The same Date for every
 * input (milliseconds truncated, as there); anything else (BC, infinity, a five-digit year) goes to
 * the default parser.
 */
export function parseTimestamptz(text: string): Date {
  const end = text.length;
  if (end < 22 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 32 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) {
    return defaultParser(text);
  }
  let at = 19;
  let millis = 0;
  if (text.charCodeAt(at) === 46) {
    let count = 0;
    for (at += 1; at < end; at++) {
      const digit = text.charCodeAt(at) - 48;
      if (digit < 0 || digit > 9) break;
      if (count < 3) millis = millis * 10 + digit;
      count += 1;
    }
    if (count === 0) return defaultParser(text);
    for (; count < 3; count++) millis *= 10;
  }
  const sign = text.charCodeAt(at) === 43 ? 1 : text.charCodeAt(at) === 45 ? -1 : 0;
  let offsetSeconds = digits(text, at + 1, 2) * 3600;
  at += 3;
  for (const unit of [60, 1]) {
    if (at < end && text.charCodeAt(at) === 58) {
      offsetSeconds += digits(text, at + 1, 2) * unit;
      at += 3;
    }
  }
  const utc = Date.UTC(digits(text, 0, 4), digits(text, 5, 2) - 1, digits(text, 8, 2), digits(text, 11, 2), digits(text, 14, 2), digits(text, 17, 2), millis);
  if (sign === 0 || at !== end || Number.isNaN(utc) || Number.isNaN(offsetSeconds) || text.charCodeAt(0) === 48) return defaultParser(text);
  return new Date(utc - sign * offsetSeconds * 1000);
}

/** pg's type parsers with timestamptz read by parseTimestamptz. */
export const DATA_PLANE_TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === TIMESTAMPTZ_OID && format !== 'binary' ? parseTimestamptz : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

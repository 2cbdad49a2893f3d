import { ForeignKeyConstraintViolationException, UniqueConstraintViolationException } from '@mikro-orm/core';

/**
 * True when `error` is PostgreSQL refusing a duplicate on the named constraint or index: as the
 * ORM converts it (flush, its query methods), or as the driver raised it (a connection's execute).
 */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const detail = error as { code?: string; constraint?: string; message?: string };
  if (!(error instanceof UniqueConstraintViolationException) && detail?.code !== '23505') return false;
  return detail.constraint === constraint || (detail.message ?? '').includes(`"${constraint}"`);
}

/**
 * True when `error` is PostgreSQL refusing a row whose reference is gone (23503) on the named
 * constraint: the row it points at was deleted since it was read (a purge racing a write).
 */
export function isForeignKeyViolation(error: unknown, constraint: string): boolean {
  const detail = error as { code?: string; constraint?: string; message?: string };
  if (!(error instanceof ForeignKeyConstraintViolationException) && detail?.code !== '23503') return false;
  return detail.constraint === constraint || (detail.message ?? '').includes(`"${constraint}"`);
}

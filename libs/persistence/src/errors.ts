import { UniqueConstraintViolationException } from '@mikro-orm/core';

/** True when `error` is PostgreSQL refusing a duplicate on the named constraint or index. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  if (!(error instanceof UniqueConstraintViolationException)) return false;
  const detail = error as unknown as { constraint?: string; message: string };
  return detail.constraint === constraint || error.message.includes(`"${constraint}"`);
}

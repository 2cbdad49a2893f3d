import { ValidationError } from './errors.js';

/** Letters, digits and underscores, starting with a letter or underscore, 1 to 63 characters. */
export const DATABASE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const DATABASE_NAME_MAX_LENGTH = 63;
/** DATABASE_NAME_PATTERN in words, for a client told what is wrong. */
export const DATABASE_NAME_RULE = 'must be letters, digits and underscores, starting with a letter or underscore';

export function isValidDatabaseName(name: string): boolean {
  return name.length >= 1 && name.length <= DATABASE_NAME_MAX_LENGTH && DATABASE_NAME_PATTERN.test(name);
}

export function assertDatabaseName(name: string): void {
  if (!isValidDatabaseName(name)) {
    throw new ValidationError(
      'invalid_database_name',
      `Database name must be 1 to ${DATABASE_NAME_MAX_LENGTH} characters of letters, digits and underscores, starting with a letter or underscore`,
    );
  }
}

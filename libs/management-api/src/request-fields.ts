import {
  DATABASE_NAME_MAX_LENGTH,
  DATABASE_NAME_PATTERN,
  DATABASE_NAME_RULE,
  EMAIL_MAX_LENGTH,
  EMAIL_PATTERN,
  EMAIL_RULE,
  PASSWORD_MAX_LENGTH,
  ValidationError,
  PASSWORD_MIN_LENGTH,
  PERSON_NAME_MAX_LENGTH,
  TENANT_NAME_MAX_LENGTH,
  WORKSPACE_NAME_MAX_LENGTH,
  WORKSPACE_SLUG_MAX_LENGTH,
  WORKSPACE_SLUG_MIN_LENGTH,
  WORKSPACE_SLUG_PATTERN,
  WORKSPACE_SLUG_RULE,
} from '@platform/domain';
import { text } from '@platform/http';

// Request fields held to the domain's rules, so the schema that validates and documents a field
// cannot drift from the rule the use case enforces.

/** The domain keeps no rule for pictures; URLs longer than this are not worth storing. */
export const PICTURE_URL_MAX_LENGTH = 2048;

export const emailField = (description: string) =>
  text({ max: EMAIL_MAX_LENGTH, pattern: EMAIL_PATTERN, patternMessage: EMAIL_RULE, description });

/**
 * Bounded before hashing: the cost of a sign-in is not the client's to choose. The minimum is the
 * use case's to check, so a short password answers invalid_password at sign-up and the same 401
 * as any other failure at sign-in.
 */
export const passwordField = text({ min: 1, max: PASSWORD_MAX_LENGTH, description: `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters` });

export const personNameField = (description: string) => text({ max: PERSON_NAME_MAX_LENGTH, description });

/** A picture is shown by other people's browsers: https only (no javascript:, data: or plain http:). */
function isHttpsUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.hostname !== '';
  } catch {
    return false;
  }
}

export const pictureUrlField = text({
  max: PICTURE_URL_MAX_LENGTH,
  format: 'uri',
  check: { test: isHttpsUrl, message: 'must be an https URL' },
  description: 'An https URL of the user’s picture',
});

export const tenantNameField = text({ min: 1, max: TENANT_NAME_MAX_LENGTH, description: 'The tenant’s name' });

export const databaseNameField = (description: string) =>
  text({ min: 1, max: DATABASE_NAME_MAX_LENGTH, pattern: DATABASE_NAME_PATTERN, patternMessage: DATABASE_NAME_RULE, description });

export const workspaceNameField = text({ min: 1, max: WORKSPACE_NAME_MAX_LENGTH, description: 'Display name' });

export const workspaceSlugField = (description: string) =>
  text({ min: WORKSPACE_SLUG_MIN_LENGTH, max: WORKSPACE_SLUG_MAX_LENGTH, pattern: WORKSPACE_SLUG_PATTERN, patternMessage: WORKSPACE_SLUG_RULE, description });

/** RFC 3339 with its offset: what `start` and `end` take. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

export function instantOf(field: string, value: string): Date {
  const parsed = new Date(value);
  if (!INSTANT.test(value) || Number.isNaN(parsed.getTime())) {
    throw new ValidationError('invalid_window', `${field} must be a date-time with an offset, such as 2026-11-22T12:00:00Z; got '${value}'`);
  }
  return parsed;
}

/** A query field sent once; a repeated one counts as absent. */
export function singleField(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  return values.length === 1 ? values[0] : undefined;
}

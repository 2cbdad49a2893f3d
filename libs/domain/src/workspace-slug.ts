import { ValidationError } from './errors.js';

/** Lower-case letters, digits and single hyphens, starting with a letter, 3 to 48 characters. */
export const WORKSPACE_SLUG_PATTERN = /^[a-z](?:[a-z0-9]|-(?=[a-z0-9]))*$/;
export const WORKSPACE_SLUG_MIN_LENGTH = 3;
export const WORKSPACE_SLUG_MAX_LENGTH = 48;
/** WORKSPACE_SLUG_PATTERN in words, for a client told what is wrong. */
export const WORKSPACE_SLUG_RULE = 'must be lower-case letters, digits and single hyphens, starting with a letter';

export function isValidWorkspaceSlug(slug: string): boolean {
  return (
    slug.length >= WORKSPACE_SLUG_MIN_LENGTH &&
    slug.length <= WORKSPACE_SLUG_MAX_LENGTH &&
    WORKSPACE_SLUG_PATTERN.test(slug)
  );
}

export function assertWorkspaceSlug(slug: string): void {
  if (!isValidWorkspaceSlug(slug)) {
    throw new ValidationError(
      'invalid_workspace_slug',
      `Workspace slug must be ${WORKSPACE_SLUG_MIN_LENGTH} to ${WORKSPACE_SLUG_MAX_LENGTH} lower-case letters, digits and single hyphens, starting with a letter`,
    );
  }
}

/** Derives a slug from a display name; the caller adds a suffix when it is taken. */
export function slugFromName(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^[^a-z]+/, '')
    .slice(0, WORKSPACE_SLUG_MAX_LENGTH - 8)
    .replace(/-+$/, '');
  return isValidWorkspaceSlug(base) ? base : 'workspace';
}

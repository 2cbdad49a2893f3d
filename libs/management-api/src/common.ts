import { text } from '@platform/http';

/** Path parameters are bounded; a value that cannot exist answers 404 after the lookup. */
export const workspaceSlugParam = text({ min: 1, max: 100, description: 'The workspace slug' });
export const databaseNameParam = text({ min: 1, max: 100, description: 'The database name' });

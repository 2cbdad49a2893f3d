import { OAuthError } from '@platform/domain';

const MAX_LENGTH = 4096;

/** A form or query as the framework hands it over: string fields, arrays for repeated ones. */
export type FormFields = Record<string, unknown>;

/** A field of an OAuth request; a repeated or oversized field is a malformed request (RFC 6749 section 3.2). */
export function singleParameter(form: FormFields, name: string): string | undefined {
  const value = form[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `'${name}' must appear once`);
  if (value.length > MAX_LENGTH) throw new OAuthError('invalid_request', `'${name}' is too long`);
  return value;
}

/** A field the request cannot do without: absent or empty is invalid_request. */
export function requiredParameter(form: FormFields, name: string): string {
  const value = singleParameter(form, name);
  if (!value) throw new OAuthError('invalid_request', `'${name}' is required`);
  return value;
}

/** The pages' fields: a repeated or oversized one counts as absent, which each check then refuses. */
export function singleValues(source: FormFields | undefined, names: readonly string[]): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const name of names) {
    const value = source?.[name];
    values[name] = typeof value === 'string' && value.length <= MAX_LENGTH ? value : undefined;
  }
  return values;
}

import { ValidationError } from './errors.js';

// The rules for what people type when they sign up, sign in or name things: one place, used by
// the use cases and by the route schemas that document them.

/** RFC 5321's limits: a local part of at most 64 octets, a domain of at most 255. */
export const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
export const EMAIL_MAX_LENGTH = 320;
/** EMAIL_PATTERN in words, for a client told what is wrong. */
export const EMAIL_RULE = 'must be an email address such as ada@example.com: one @, no spaces, at most 64 characters before the @';

export function isEmail(value: string): boolean {
  return value.length <= EMAIL_MAX_LENGTH && EMAIL_PATTERN.test(value);
}

export function assertEmail(email: string): void {
  if (!isEmail(email)) throw new ValidationError('invalid_email', 'Enter an email address such as ada@example.com');
}

export const PASSWORD_MIN_LENGTH = 8;
/** Longer passwords are refused before hashing: hashing cost must not be the client's to choose. */
export const PASSWORD_MAX_LENGTH = 256;

export function assertPassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new ValidationError('invalid_password', `Password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`);
  }
}

/** A person's name, a user's profile fields. */
export const PERSON_NAME_MAX_LENGTH = 255;

/** A person's name as typed, trimmed; null when left empty. */
export function cleanPersonName(name: string | undefined): string | null {
  const trimmed = name?.trim() || null;
  if (trimmed !== null && trimmed.length > PERSON_NAME_MAX_LENGTH) {
    throw new ValidationError('invalid_name', `Name must be at most ${PERSON_NAME_MAX_LENGTH} characters`);
  }
  return trimmed;
}

export const TENANT_NAME_MAX_LENGTH = 255;
export const WORKSPACE_NAME_MAX_LENGTH = 100;

function trimmedName(name: string, maxLength: number, code: string, message: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > maxLength) throw new ValidationError(code, message);
  return trimmed;
}

/** A tenant name is trimmed and must keep at least one character. */
export function cleanTenantName(name: string): string {
  return trimmedName(name, TENANT_NAME_MAX_LENGTH, 'invalid_tenant_name', `Tenant name must be 1 to ${TENANT_NAME_MAX_LENGTH} characters, not only spaces`);
}

/** A workspace name is trimmed and must keep at least one character. */
export function cleanWorkspaceName(name: string): string {
  return trimmedName(name, WORKSPACE_NAME_MAX_LENGTH, 'invalid_workspace_name', `Workspace name must be 1 to ${WORKSPACE_NAME_MAX_LENGTH} characters`);
}

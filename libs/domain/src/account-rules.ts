import { ValidationError } from './errors.js';

// The rules for what people type when they sign up, sign in or name things: one place, used by
// the use cases and by the route schemas that document them.

/** RFC 5321's limits: a local part of at most 64 octets, a domain of at most 255. */
export const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
export const EMAIL_MAX_LENGTH = 320;

export function isEmail(value: string): boolean {
  return value.length <= EMAIL_MAX_LENGTH && EMAIL_PATTERN.test(value);
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

export const TENANT_NAME_MAX_LENGTH = 255;

import { randomBytes } from 'node:crypto';

/** Registered clients get `cli_` and 16 characters; first-party clients have names (`platform-cli`). */
export const CLIENT_ID_MAX_LENGTH = 64;
export const CLIENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** CLIENT_ID_PATTERN in words. */
export const CLIENT_ID_RULE = 'must be letters, digits, underscores and hyphens';

/** Whether `value` can be a client id at all: anything else names no client and is never looked up. */
export function isClientId(value: string): boolean {
  return CLIENT_ID_PATTERN.test(value);
}

/** A new registered client's id: `cli_` and 96 random bits in base64url. */
export function newClientId(): string {
  return `cli_${randomBytes(12).toString('base64url')}`;
}

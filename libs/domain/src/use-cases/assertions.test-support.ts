// What the use cases' unit tests assert with: the error a promise rejected with, as a client sees it.
import { DomainError, RateLimitedError } from '../errors.js';

/** What `promise` rejected with; fails the test when it resolves instead. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}

/** What a use case threw, as a client would see it; fails when it did not throw a DomainError. */
export async function failure(promise: Promise<unknown>): Promise<{ name: string; kind: string; code: string; message: string; retryAfterSeconds?: number }> {
  let thrown: unknown;
  try {
    await promise;
  } catch (error) {
    thrown = error;
  }
  if (!(thrown instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(thrown)}`);
  const { name, kind, code, message } = thrown;
  return thrown instanceof RateLimitedError ? { name, kind, code, message, retryAfterSeconds: thrown.retryAfterSeconds } : { name, kind, code, message };
}

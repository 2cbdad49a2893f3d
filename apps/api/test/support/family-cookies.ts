import type { TestResponse } from '@platform/testing';

/** The `name=value` pair of the cookie a response sets under `name` (the API family's `nile.*` cookies), or '' when it sets none. */
export function pairOf(response: TestResponse | Response, name: string): string {
  return (response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`)) ?? '').split(';')[0]!;
}

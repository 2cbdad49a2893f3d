import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createDatabase, developerWithWorkspace, uniqueDatabaseName, uniqueSlug, waitForStatus } from '@platform/test-fixtures';
import type { TestPlatform } from './platform.js';

// Tenants and users: fixtures only this app's tests need (the shared ones are in @platform/test-fixtures).

// Until http-contract.test.ts imports it from @platform/test-fixtures itself.
export { expectApiError } from '@platform/test-fixtures';

export const TEST_PASSWORD = 'correct horse battery staple';

export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}@example.test`;
}

/** A developer with a workspace and a READY database in it; `D` is the database's path. */
export async function developerWithReadyDatabase(p: TestPlatform) {
  const owner = await developerWithWorkspace(p);
  const databaseName = uniqueDatabaseName();
  await createDatabase(p, owner.token, owner.slug, databaseName);
  const database = await waitForStatus(p, owner.token, owner.slug, databaseName, 'READY');
  return { ...owner, databaseName, database, D: `/workspaces/${owner.slug}/databases/${databaseName}` };
}

export interface TestTenant {
  id: string;
  name: string | null;
  created: string;
  updated: string;
}

/** POST D/tenants, expecting 201. */
export async function createTenant(p: TestPlatform, token: string, D: string, body: { name: string; id?: string } = { name: uniqueSlug('tenant') }): Promise<TestTenant> {
  const created = await p.request('POST', `${D}/tenants`, { token, json: body });
  expect(created.status, created.text).to.equal(201);
  return created.body;
}

/** The value of the `auth.session-token` cookie a response sets, if it sets one. */
export function sessionCookieOf(response: { headers: Headers }): string | undefined {
  for (const cookie of response.headers.getSetCookie()) {
    const match = /^auth\.session-token=([^;]*)/.exec(cookie);
    if (match) return match[1];
  }
  return undefined;
}

export interface TestUser {
  id: string;
  email: string;
  password: string;
  /** The bearer token of the user's session. */
  jwt: string;
  /** The session cookie's value. */
  session: string;
}

/** POST T/users with `token` (a developer's or a member's), expecting 201. */
export async function createUser(
  p: TestPlatform,
  token: string,
  T: string,
  input: { email?: string; password?: string; name?: string } = {},
): Promise<TestUser> {
  const email = input.email ?? uniqueEmail();
  const password = input.password ?? TEST_PASSWORD;
  const json = { email, password, ...(input.name === undefined ? {} : { name: input.name }) };
  const created = await p.request('POST', `${T}/users`, { token, json });
  expect(created.status, created.text).to.equal(201);
  const session = sessionCookieOf(created);
  expect(session, 'the session cookie').to.be.a('string').with.length.greaterThan(0);
  return { id: created.body.id, email, password, jwt: created.body.token.jwt, session: session as string };
}

/** POST {path}/users/login (a database's or a tenant's), expecting 200; a new session of the user. */
export async function loginUser(p: TestPlatform, path: string, user: { email: string; password: string }): Promise<TestUser & { tenants: string[] }> {
  const response = await p.request('POST', `${path}/users/login`, { json: { email: user.email, password: user.password } });
  expect(response.status, response.text).to.equal(200);
  const session = sessionCookieOf(response);
  expect(session, 'the session cookie').to.be.a('string').with.length.greaterThan(0);
  return {
    id: response.body.id,
    email: user.email,
    password: user.password,
    jwt: response.body.token.jwt,
    session: session as string,
    tenants: response.body.tenants,
  };
}

import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { eventually } from '@platform/testing';
import type { TestPlatform } from './platform.js';

export function uniqueSlug(prefix = 'ws'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export function uniqueDatabaseName(prefix = 'db'): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

/** A developer with a workspace of their own. */
export async function developerWithWorkspace(p: TestPlatform) {
  const developer = await p.controlPlane.newDeveloper();
  const slug = uniqueSlug();
  const created = await p.request('POST', '/workspaces', { token: developer.token, json: { name: `Workspace ${slug}`, slug } });
  expect(created.status, created.text).to.equal(201);
  return { developer, token: developer.token, slug, workspace: created.body };
}

export async function createDatabase(p: TestPlatform, token: string, slug: string, name = uniqueDatabaseName(), region = 'AWS_US_WEST_2') {
  const created = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: name, region } });
  expect(created.status, created.text).to.equal(201);
  return created.body;
}

export async function waitForStatus(p: TestPlatform, token: string, slug: string, name: string, status: string) {
  return eventually(async () => {
    const found = await p.request('GET', `/workspaces/${slug}/databases/${name}`, { token });
    return found.body?.status === status ? found.body : undefined;
  }, 20_000, `database ${name} to be ${status}`);
}

/** Asserts an APIError body with the exact status and code. */
export function expectApiError(response: { status: number; body: any; text: string }, status: number, errorCode?: string) {
  expect(response.status, response.text).to.equal(status);
  expect(response.body).to.be.an('object');
  expect(response.body.statusCode).to.equal(status);
  expect(response.body.message).to.be.a('string').with.length.greaterThan(0);
  if (errorCode) expect(response.body.errorCode).to.equal(errorCode);
  else expect(response.body.errorCode).to.be.a('string').and.match(/^[a-z_]+$/);
  expect(response.text).not.to.match(/at .*\.ts:\d+/);
}

// ---- Tenants and users ----

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

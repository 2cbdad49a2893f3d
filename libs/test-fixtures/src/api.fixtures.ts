import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { eventually, type httpClient, type TestResponse } from '@platform/testing';
import type { TestControlPlane } from './control-plane.js';

/** What the fixtures drive: the management API under test and the control plane behind it. */
export interface ApiUnderTest {
  controlPlane: Pick<TestControlPlane, 'newDeveloper'>;
  request: ReturnType<typeof httpClient>;
}

export function uniqueSlug(prefix = 'ws'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export function uniqueDatabaseName(prefix = 'db'): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

/** A developer with a workspace of their own. */
export async function developerWithWorkspace(p: ApiUnderTest) {
  const developer = await p.controlPlane.newDeveloper();
  const slug = uniqueSlug();
  const created = await p.request('POST', '/workspaces', { token: developer.token, json: { name: `Workspace ${slug}`, slug } });
  expect(created.status, created.text).to.equal(201);
  return { developer, token: developer.token, slug, workspace: created.body };
}

/** POST /workspaces/{slug}/databases, expecting 201. */
export async function createDatabase(p: ApiUnderTest, token: string, slug: string, name = uniqueDatabaseName(), region = 'AWS_US_WEST_2') {
  const created = await p.request('POST', `/workspaces/${slug}/databases`, { token, json: { databaseName: name, region } });
  expect(created.status, created.text).to.equal(201);
  return created.body;
}

/** Polls the database until it has `status`; answers its body then. */
export async function waitForStatus(p: ApiUnderTest, token: string, slug: string, name: string, status: string) {
  return eventually(async () => {
    const found = await p.request('GET', `/workspaces/${slug}/databases/${name}`, { token });
    return found.body?.status === status ? found.body : undefined;
  }, 20_000, `database ${name} to be ${status}`);
}

/** Asserts an APIError body with the exact status and code. */
export function expectApiError(response: Pick<TestResponse, 'status' | 'body' | 'text'>, status: number, errorCode?: string) {
  expect(response.status, response.text).to.equal(status);
  expect(response.body).to.be.an('object');
  expect(response.body.statusCode).to.equal(status);
  expect(response.body.message).to.be.a('string').with.length.greaterThan(0);
  if (errorCode) expect(response.body.errorCode).to.equal(errorCode);
  else expect(response.body.errorCode).to.be.a('string').and.match(/^[a-z_]+$/);
  expect(response.text).not.to.match(/at .*\.ts:\d+/);
}

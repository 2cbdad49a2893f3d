import { expect } from 'chai';
import { statfsSync } from 'node:fs';
import { expectApiError } from '@platform/test-fixtures';
import { query } from '@platform/testing';
import { platform, SERVED_REGIONS, type TestPlatform } from './support/platform.js';

describe('HTTP contract', function () {
  let p: TestPlatform;
  before(async function () {
    p = await platform();
  });

  it('answers unknown routes with a 404 APIError and unknown methods with 405 and the methods the path takes', async function () {
    expectApiError(await p.request('GET', '/no/such/route'), 404, 'route_not_found');
    const patched = await p.request('PATCH', '/workspaces');
    expectApiError(patched, 405, 'method_not_allowed');
    expect(patched.body).to.deep.equal({ errorCode: 'method_not_allowed', message: 'The route does not accept this method', statusCode: 405 });
    expect(patched.headers.get('allow')).to.equal('POST, HEAD, GET');
    const rotated = await p.request('GET', '/workspaces/x/oauth-clients/y/secret');
    expectApiError(rotated, 405, 'method_not_allowed');
    expect(rotated.headers.get('allow')).to.equal('POST');
    expectApiError(await p.request('GET', '/workspaces/x/databases/y/z/w'), 404, 'route_not_found');
  });

  it('answers a body that is not JSON with 415 unsupported_content_type', async function () {
    const { token } = await p.controlPlane.newDeveloper();
    const refused = await p.request('POST', '/workspaces', { token, raw: 'name=x', contentType: 'application/x-www-form-urlencoded' });
    expect(refused.status).to.equal(415);
    expect(refused.body).to.deep.equal({
      errorCode: 'unsupported_content_type',
      message: 'The request body must be JSON (Content-Type: application/json)',
      statusCode: 415,
    });
  });

  it('answers a body nested 5,000 arrays deep with 400 validation_failed, signed in or not (issue 11, finding 3)', async function () {
    const deep = `{"email":${'['.repeat(5000)}${']'.repeat(5000)},"password":"x"}`;
    const { token } = await p.controlPlane.newDeveloper();
    const answers = [
      await p.request('POST', '/workspaces', { token, raw: deep.replace('"email"', '"name"'), contentType: 'application/json' }),
      // Unauthenticated: a user's sign-in to a database that need not exist.
      await p.request('POST', '/workspaces/nowhere/databases/none/users/login', { raw: deep, contentType: 'application/json' }),
    ];
    for (const answer of answers) {
      expect(answer.status, answer.text).to.equal(400);
      expect(answer.body).to.deep.equal({ errorCode: 'validation_failed', message: 'body: nested deeper than 32 levels of arrays and objects', statusCode: 400 });
    }
  });

  it('echoes a sane X-Request-Id and makes one up otherwise', async function () {
    const echoed = await p.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-123' } });
    expect(echoed.headers.get('x-request-id')).to.equal('trace-123');
    const replaced = await p.request('GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces\t' } });
    expect(replaced.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    const fresh = await p.request('GET', '/no/such/route');
    expect(fresh.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  it('answers /healthz and /readyz, with the free space of the PostgreSQL servers’ disks and their WAL archiving', async function () {
    expect((await p.request('GET', '/healthz')).body).to.deep.equal({ status: 'ok' });
    const ready = await p.request('GET', '/readyz');
    // One server holds the control plane and both served regions' clusters here.
    const [{ dir }] = await query<{ dir: string }>(p.postgres.adminUrl, `select current_setting('data_directory') as dir`);
    const disk = statfsSync(dir);
    const total = disk.blocks * disk.bsize;
    expect(ready.status).to.equal(200);
    expect(Object.keys(ready.body)).to.deep.equal(['status', 'disk', 'backups']);
    expect(ready.body.status).to.equal('ok');
    expect(ready.body.disk).to.have.length(1);
    const [server] = ready.body.disk;
    expect(server.servers).to.deep.equal(['control plane', ...SERVED_REGIONS]);
    expect(server.totalBytes).to.equal(total);
    // Other processes write to the same disk meanwhile.
    expect(Math.abs(server.freeBytes - disk.bavail * disk.bsize)).to.be.below(total / 100);
    expect(server.low).to.equal(server.freeBytes * 100 < total * 10);
    // The tests' servers archive nothing (only the backup tests turn it on): nothing to back up here.
    expect(ready.body.backups).to.deep.equal([
      {
        servers: ['control plane', ...SERVED_REGIONS],
        archiving: 'off',
        lastArchivedAt: null,
        lastFailedAt: null,
        failedCount: 0,
        managed: false,
        lastBackup: null,
        restorableFrom: null,
        walGap: false,
      },
    ]);
  });

  it('serves an OpenAPI 3.1 document generated from the route table', async function () {
    const { status, body } = await p.request('GET', '/openapi.json');
    expect(status).to.equal(200);
    expect(body.openapi).to.equal('3.1.0');
    expect(body.info.version).to.equal('0.1.0-abc1234');
    expect(body.paths).to.have.all.keys(
      '/',
      '/docs',
      '/docs/assets/{file}',
      '/console',
      '/console/assets/{file}',
      '/healthz',
      '/readyz',
      '/workspaces',
      '/workspaces/{workspaceSlug}',
      '/workspaces/{workspaceSlug}/regions',
      '/workspaces/{workspaceSlug}/members',
      '/workspaces/{workspaceSlug}/members/{developerId}',
      '/workspaces/{workspaceSlug}/invitations',
      '/workspaces/{workspaceSlug}/invitations/{invitationId}',
      '/workspaces/{workspaceSlug}/databases',
      '/workspaces/{workspaceSlug}/databases/{databaseName}',
      '/workspaces/{workspaceSlug}/databases/{databaseId}/restore',
      '/workspaces/{workspaceSlug}/databases/{databaseId}/purge',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/auth-settings',
      '/workspaces/{workspaceSlug}/compute-types',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/compute',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/compute/{instanceId}',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/credentials',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/credentials/{credentialId}',
      '/workspaces/{workspaceSlug}/databases/{databaseId}/insights/query-performance',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/users',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/users/login',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/users/{userId}',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/users/{userId}/link',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/users/login',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/users/logout',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/users/me',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/users/{userId}',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/users/{userId}/tenants',
      '/v2/databases/{database}/tenants/{tenantId}/users',
      // The API family's auth API (README "Apps built on the family's SDK").
      '/v2/databases/{database}/auth/csrf',
      '/v2/databases/{database}/auth/providers',
      '/v2/databases/{database}/auth/session',
      '/v2/databases/{database}/auth/callback/credentials',
      '/v2/databases/{database}/auth/signin/{provider}',
      '/v2/databases/{database}/auth/callback/{provider}',
      '/v2/databases/{database}/auth/signout',
      '/v2/databases/{database}/signup',
      '/v2/databases/{database}/me',
      '/v2/databases/{database}/users',
      '/v2/databases/{database}/users/{userId}/tenants',
      '/v2/databases/{database}/tenants',
      '/v2/databases/{database}/tenants/{tenantId}',
      '/v2/databases/{database}/tenants/{tenantId}/users/{userId}/link',
      '/v2/databases/{database}/auth/reset-password',
      '/v2/databases/{database}/auth/verify-email',
      '/v2/databases/{database}/auth/mfa',
      '/v2/databases/{database}/tenants/{tenantId}/invite',
      '/v2/databases/{database}/tenants/{tenantId}/invites',
      '/v2/databases/{database}/tenants/{tenantId}/invite/{inviteId}',
      '/v2/databases/{database}/tenants/{tenantId}/invite/accept',
      '/workspaces/{workspaceSlug}/oauth-clients',
      '/workspaces/{workspaceSlug}/oauth-clients/{clientId}',
      '/workspaces/{workspaceSlug}/oauth-clients/{clientId}/secret',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/auth/oidc/locations',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/auth/oidc/providers',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/auth/oidc/providers',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/auth/oidc/providers/{providerName}',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/auth/oidc/providers/{providerName}/login',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/auth/oidc/providers/{providerName}/link',
      '/workspaces/{workspaceSlug}/databases/{databaseName}/tenants/{tenantId}/auth/oidc/callback',
      '/developers/me',
      '/developers/me/invitations',
      '/developers/me/invitations/{invitationId}/accept',
      '/developers/me/invitations/{invitationId}/decline',
      '/oauth2/token',
      '/oauth2/revoke',
    );
    const rename = body.paths['/workspaces/{workspaceSlug}/databases/{databaseName}'].put;
    expect(rename.security).to.deep.equal([{ jwtBearerAuth: [] }]);
    expect(rename.requestBody.content['application/json'].schema.properties.name).to.include({ maxLength: 63, minLength: 1 });
    expect(rename.responses).to.include.keys('200', '400', '401', '404', '409', '500');
    // What the framework answers for it: a token without the scope, a body too large or not JSON.
    expect(rename.responses).to.include.keys('403', '413', '415');
    expect(Object.keys(body.paths['/healthz'].get.responses)).to.deep.equal(['200', '500', '503']);
    expect(rename.responses['200'].content['application/json'].schema.required).to.include('parent');
    // Restores and branches: the same POST, with `from`; the database says where its data came from.
    const create = body.paths['/workspaces/{workspaceSlug}/databases'].post;
    const createBody = create.requestBody.content['application/json'].schema;
    expect(createBody.properties.from.properties).to.have.all.keys('database', 'at');
    expect(createBody.required).to.deep.equal(['databaseName']);
    expect(create.responses).to.include.keys('201', '400', '404', '409');
    expect(create.description).to.include('restore_point_outside_window').and.include('backups_not_configured');
    expect(create.responses['201'].content['application/json'].schema.properties.source.properties).to.have.all.keys('id', 'at');
    expect(body.paths['/healthz'].get.security).to.deep.equal([]);
    expect(body.components.securitySchemes.jwtBearerAuth).to.include({ type: 'http', scheme: 'bearer' });
  });
});

import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, requireChromium } from '@platform/test-fixtures';
import { createTenant, createUser, developerWithReadyDatabase } from './support/fixtures.js';
import { platform, TEST_AUDIENCE, type TestPlatform } from './support/platform.js';

/**
 * The docs page as a person uses it, in headless Chromium under the page's own CSP: every
 * operation of the OpenAPI document is listed, nothing is refused by the policy or fetched from
 * elsewhere, and an operation tried with a bearer token given in "Authorize" answers. The API's
 * public URL is http://api.test; the browser resolves that name to the API under test.
 */
describe('the docs page in a real browser (Chromium)', function () {
  this.timeout(60_000);
  let p: TestPlatform;
  let browser: Browser | undefined;
  let page: Page;
  const consoleLines: string[] = [];
  const requested: string[] = [];

  before(async function () {
    requireChromium(this);
    p = await platform();
    const api = new URL(p.api.url);
    browser = await launchChromium([`--host-resolver-rules=MAP ${new URL(TEST_AUDIENCE).hostname}:80 ${api.hostname}:${api.port}`]);
    page = await (await browser.newContext()).newPage();
    page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
    page.on('request', (request) => requested.push(request.url()));
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      mkdirSync('tmp', { recursive: true });
      const file = `tmp/docs-browser-failure-${Date.now()}.png`;
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.error(`    browser at ${page.url()}; screenshot ${file}; console:\n      ${consoleLines.join('\n      ') || '(nothing)'}`);
    }
  });

  after(async function () {
    await browser?.close();
  });

  it('lists every operation of /openapi.json, with nothing refused by its policy and nothing fetched from elsewhere', async function () {
    const { body: document } = await p.request('GET', '/openapi.json');
    const operations = Object.values(document.paths as Record<string, object>).reduce((count, methods) => count + Object.keys(methods).length, 0);
    await page.goto(`${TEST_AUDIENCE}/docs`);
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    expect(await page.locator('.opblock').count()).to.equal(operations);
    expect(await page.locator('.info .title').innerText()).to.include('Multi-tenant PostgreSQL platform API');
    // A refused resource or one that failed to load (a 404 such as /favicon.ico) is said on the console.
    const refused = consoleLines.filter((line) => /Content Security Policy|Refused to|Failed to load/i.test(line));
    expect(refused, refused.join('\n')).to.deep.equal([]);
    const elsewhere = requested.filter((url) => !url.startsWith(`${TEST_AUDIENCE}/`) && !url.startsWith('data:'));
    expect(elsewhere).to.deep.equal([]);
  });

  it('tries an operation with a bearer token given in "Authorize"', async function () {
    const { token } = await p.controlPlane.newDeveloper();
    await page.click('button.authorize');
    const bearer = page.locator('.auth-container', { hasText: 'jwtBearerAuth' });
    await bearer.locator('input').fill(token);
    await bearer.locator('button.authorize').click();
    await page.click('button.btn-done');
    const operation = page.locator('#operations-workspaces-listWorkspaces');
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status');
    await status.waitFor({ timeout: 15_000 });
    expect((await status.innerText()).trim()).to.equal('200');
    expect(await operation.locator('.live-responses-table .response-col_description .microlight').first().innerText()).to.match(/^\[/);
  });

  /** Opens an operation, fills its parameters and JSON body, runs it, and answers the status and body the page shows. */
  async function tryOperation(id: string, params: Record<string, string>, body: object): Promise<{ status: string; body: string }> {
    const operation = page.locator(`#operations-users-${id}`);
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    for (const [name, value] of Object.entries(params)) await operation.locator(`tr[data-param-name="${name}"] input`).fill(value);
    await operation.locator('textarea.body-param__text').fill(JSON.stringify(body));
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status');
    await status.waitFor({ timeout: 15_000 });
    return { status: (await status.innerText()).trim(), body: await operation.locator('.live-responses-table .response-col_description .microlight').first().innerText() };
  }

  it('signs a user in from the page, and a cookie-authenticated operation tried next carries the session', async function () {
    const owner = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, owner.token, owner.D);
    const user = await createUser(p, owner.token, `${owner.D}/tenants/${tenant.id}`);
    const signedIn = await tryOperation('loginUser', { workspaceSlug: owner.slug, databaseName: owner.databaseName }, { email: user.email, password: user.password });
    expect(signedIn.status, signedIn.body).to.equal('200');
    const cookies = await page.context().cookies(TEST_AUDIENCE);
    expect(cookies.map((cookie) => cookie.name)).to.include('auth.session-token');
    // The cookie reached the route: a member is 403 developer_token_required here (members do not
    // create users on this platform); without it the answer would be 401 invalid_session.
    const created = await tryOperation('createTenantUserV2', { database: owner.database.id, tenantId: tenant.id }, { email: `x-${Date.now()}@example.com`, password: 'correct horse battery' });
    expect(created.status, created.body).to.equal('403');
    expect(JSON.parse(created.body)).to.include({ errorCode: 'developer_token_required' });
  });
});

import { expect } from 'chai';
import { mkdirSync, rmSync } from 'node:fs';
import pg from 'pg';
import type { Browser, Locator, Page } from 'playwright-core';
import { launchChromium, requireChromium, signUpDeveloper, startAppProcess, type AppProcess } from '@platform/test-fixtures';
import { eventually } from '@platform/testing';
import { platform, TEST_AUDIENCE, TEST_ISSUER, type TestPlatform } from './support/platform.js';

/** Kept after the run (tmp/ is ignored by git): what the browser showed at each step. */
const ARTEFACTS = 'tmp/test-artifacts/console';
const QUERIES = 240;

/** What the console shows for a figure (insights.tsx): three decimals. */
const shown = (value: number) => value.toFixed(3);

/**
 * The console as a developer uses it, in headless Chromium under the page's own CSP: signing in
 * through the token service (apps/oauth, a process of its own on the same control plane, at
 * http://oauth.test) with the authorization code flow and PKCE, a workspace and a database made
 * from the page and followed to READY, a credential shown once and used over the PostgreSQL
 * gateway, and the insights chart after a known load, read off the chart's own legend and
 * compared with what the API answers. The API is http://api.test: both names are mapped to the
 * loopback ports, and treated as secure origins (crypto.subtle, for PKCE, needs one; a real
 * installation serves https or a loopback address).
 */
describe('the console in a real browser (Chromium)', function () {
  this.timeout(120_000);
  let p: TestPlatform;
  let oauth: AppProcess | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const consoleLines: string[] = [];
  const requested: string[] = [];
  let step = 0;
  const slug = `console-${Date.now().toString(36)}`;

  async function snapshot(name: string): Promise<void> {
    step += 1;
    await page.screenshot({ path: `${ARTEFACTS}/${String(step).padStart(2, '0')}-${name}.png`, fullPage: true });
  }

  before(async function () {
    requireChromium(this);
    // This run's pictures only.
    rmSync(ARTEFACTS, { recursive: true, force: true });
    mkdirSync(ARTEFACTS, { recursive: true });
    p = await platform();
    oauth = await startAppProcess('apps/oauth/src/main.ts', {
      portVariable: 'OAUTH_PORT',
      env: {
        ...p.controlPlane.env,
        OAUTH_HOST: '127.0.0.1',
        OAUTH_ISSUER: TEST_ISSUER,
        PUBLIC_BASE_URL: TEST_AUDIENCE,
        LOG_LEVEL: 'error',
        PASSWORD_HASH_LOGN: '10',
        LOGIN_DELAY_AFTER_ADDRESS_FAILURES: '100000',
      },
    });
    const api = new URL(p.api.url);
    const rules = [`MAP ${new URL(TEST_AUDIENCE).hostname}:80 ${api.hostname}:${api.port}`, `MAP ${new URL(TEST_ISSUER).hostname}:80 127.0.0.1:${oauth.port}`];
    browser = await launchChromium([`--host-resolver-rules=${rules.join(', ')}`, `--unsafely-treat-insecure-origin-as-secure=${TEST_AUDIENCE},${TEST_ISSUER}`]);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
    page.on('request', (request) => requested.push(request.url()));
    page.on('dialog', (dialog) => void dialog.accept());
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      const file = `${ARTEFACTS}/failure-${Date.now()}.png`;
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.error(`    browser at ${page.url()}; screenshot ${file}; console:\n      ${consoleLines.join('\n      ') || '(nothing)'}`);
    }
  });

  after(async function () {
    this.timeout(60_000);
    await browser?.close();
    await oauth?.stop();
  });

  it('signs a developer in through the token service and comes back signed in', async function () {
    const developer = await signUpDeveloper(oauth!.url);
    // An answer this tab did not ask for (a forged or replayed redirect) is refused, and taken out of the address.
    await page.goto(`${TEST_AUDIENCE}/console?code=forged&state=forged&iss=${encodeURIComponent(TEST_ISSUER)}`);
    expect(await page.getByRole('alert').innerText()).to.equal('This sign-in was not started here (its state does not match): sign in again.');
    expect(page.url()).to.equal(`${TEST_AUDIENCE}/console`);
    await page.goto(`${TEST_AUDIENCE}/console`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await snapshot('signed-out');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.origin === TEST_ISSUER);
    const authorize = new URL(page.url());
    expect(authorize.pathname).to.equal('/oauth2/authorize');
    expect(Object.fromEntries(authorize.searchParams)).to.include({ client_id: 'platform-console', redirect_uri: `${TEST_AUDIENCE}/console`, code_challenge_method: 'S256', response_type: 'code' });
    await page.getByLabel('Email').fill(developer.email);
    await page.getByLabel('Password').fill(developer.password);
    await snapshot('token-service');
    await Promise.all([page.waitForURL(`${TEST_AUDIENCE}/console`), page.getByRole('button', { name: 'Sign in and allow' }).click()]);
    // The code and state are taken out of the address once redeemed.
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(page.url()).to.equal(`${TEST_AUDIENCE}/console`);
  });

  it('creates a workspace and a database from the page, whose status turns READY without a reload', async function () {
    await page.getByLabel('Workspace name').fill(slug);
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await eventually(async () => ((await page.getByLabel('Workspace', { exact: true }).inputValue()) === slug ? true : undefined), 10_000, 'the new workspace chosen');
    await page.getByLabel('Database name').fill('shop');
    await page.getByRole('button', { name: 'Create database' }).click();
    const row = page.locator('tr[data-database="shop"]');
    await row.locator('.status', { hasText: 'READY' }).waitFor({ timeout: 60_000 });
    await snapshot('database-ready');
  });

  let connectionUrl = '';
  it('creates a credential whose password and connection string are shown once, and connects with it through the gateway', async function () {
    await page.locator('tr[data-database="shop"]').getByRole('button', { name: 'shop' }).click();
    await page.getByRole('tab', { name: 'Credentials' }).click();
    await page.getByRole('button', { name: 'Create credential' }).click();
    const shownOnce = page.locator('.shown-once');
    connectionUrl = await shownOnce.getByLabel('Connection string').inputValue();
    const password = await shownOnce.getByLabel('Password').inputValue();
    expect(new URL(connectionUrl).password).to.equal(password);
    await snapshot('credential');
    await shownOnce.getByRole('button', { name: 'Done' }).click();
    expect(await page.locator('.shown-once').count()).to.equal(0);
    expect(await page.locator('[data-credential]').count()).to.equal(1);
    const rows = await withClient(connectionUrl, (client) => client.query<{ current_database: string }>('select current_database()'));
    expect(rows.rows).to.have.length(1);
  });

  it('charts the queries per second and p99 latency of a known load as the API answers them', async function () {
    await withClient(connectionUrl, async (client) => {
      for (let i = 0; i < QUERIES; i += 1) await client.query('select $1::int', [i]);
    });
    await page.getByRole('tab', { name: 'Insights' }).click();
    const charts = page.locator('.charts');
    // The gateway writes its counts every 200 ms; the page refreshes when asked.
    await eventually(
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForTimeout(300);
        return (await charts.locator('.summary').innerText()).startsWith(`${QUERIES + 1} queries`) ? true : undefined;
      },
      20_000,
      `${QUERIES + 1} queries on the page`,
    );
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('console.session') ?? '{}').accessToken as string);
    // The page's window moves on with the minute (its refresh every 10 s): read and compare within one window.
    const compared = await eventually(
      async () => {
        const window = { start: (await charts.getAttribute('data-start'))!, end: (await charts.getAttribute('data-end'))! };
        const answer = await p.request('GET', `/workspaces/${slug}/databases/shop/insights/query-performance?${new URLSearchParams({ ...window, granularity: '1m' })}`, { token });
        expect(answer.status, answer.text).to.equal(200);
        const points = answer.body.points as { proxyQueriesPerSecond: number; observerP99LatencyMs: number }[];
        const busiest = points.reduce((best, point, index) => (point.proxyQueriesPerSecond > points[best].proxyQueriesPerSecond ? index : best), 0);
        const plotted = {
          queriesPerSecond: await legendAt(page, page.getByLabel('Queries per second'), busiest, points.length),
          p99: await legendAt(page, page.getByLabel('p99 latency'), busiest, points.length),
        };
        if ((await charts.getAttribute('data-start')) !== window.start) return undefined;
        expect(Number(await charts.getAttribute('data-points'))).to.equal(points.length);
        return { point: points[busiest], plotted };
      },
      30_000,
      'the chart and the API over one window',
    );
    expect(compared.point.proxyQueriesPerSecond).to.be.greaterThan(0);
    expect(compared.plotted).to.deep.equal({ queriesPerSecond: shown(compared.point.proxyQueriesPerSecond), p99: shown(compared.point.observerP99LatencyMs) });
    await snapshot('insights');
  });

  it('creates a tenant and a user in it, and shows the tenant’s SSO providers and why one is refused', async function () {
    await page.getByRole('tab', { name: 'Tenants' }).click();
    await page.getByLabel('Tenant name').fill('Acme');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await page.getByRole('button', { name: 'Acme' }).click();
    await page.getByLabel('User email').fill('ada@example.com');
    await page.getByLabel('User password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('region', { name: 'Users' }).getByText('ada@example.com').waitFor();
    const sso = page.getByRole('region', { name: 'SSO providers' });
    await sso.getByText('No SSO provider for this tenant.').waitFor();
    // A provider on this machine is refused before anything is fetched; the page says why, as the API does.
    await sso.getByLabel('Provider name').fill('corp');
    await sso.getByLabel('Discovery URL').fill('https://127.0.0.1/.well-known/openid-configuration');
    await sso.getByLabel('Client id').fill('console');
    await sso.getByLabel('Client secret').fill('not-a-secret');
    await sso.getByLabel('Email domains').fill('corp.test');
    await sso.getByLabel('App redirect URI').fill('https://app.corp.test/sso');
    await sso.getByRole('button', { name: 'Register provider' }).click();
    expect(await sso.getByRole('alert').innerText()).to.match(/\(400 invalid_config_url\)$/);
    expect(await sso.getByText('No SSO provider for this tenant.').count()).to.equal(1);
    await snapshot('tenants');
  });

  let acmeUrl = '';
  it('charts one tenant’s queries when that tenant is chosen', async function () {
    await page.getByRole('tab', { name: 'Credentials' }).click();
    await page.getByLabel('Tenant of the credential').selectOption({ label: 'Acme' });
    await page.getByRole('button', { name: 'Create credential' }).click();
    acmeUrl = await page.locator('.shown-once').getByLabel('Connection string').inputValue();
    await page.locator('.shown-once').getByRole('button', { name: 'Done' }).click();
    await withClient(acmeUrl, async (client) => {
      for (let i = 0; i < 30; i += 1) await client.query('select $1::int', [i]);
    });
    await page.getByRole('tab', { name: 'Insights' }).click();
    await page.getByLabel('Insights tenant').selectOption({ label: 'Acme' });
    const charts = page.locator('.charts');
    await eventually(
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForTimeout(300);
        return (await charts.locator('.summary').innerText()).startsWith('30 queries') ? true : undefined;
      },
      20_000,
      'the tenant’s 30 queries on the page',
    );
    expect(await charts.getAttribute('data-tenant')).to.match(/^[0-9a-f-]{36}$/);
    await snapshot('insights-tenant');
  });

  it('deletes a credential: it is gone from the list and logs in no more', async function () {
    await page.getByRole('tab', { name: 'Credentials' }).click();
    const credentials = page.locator('[data-credential]');
    await eventually(async () => ((await credentials.count()) === 2 ? true : undefined), 10_000, 'two credentials listed');
    const acme = credentials.filter({ hasNotText: 'every tenant' });
    const user = (await acme.getAttribute('data-credential'))!;
    await acme.getByRole('button', { name: 'Delete' }).click();
    await eventually(async () => ((await credentials.count()) === 1 ? true : undefined), 10_000, 'one credential left');
    expect(await page.locator(`[data-credential="${user}"]`).count()).to.equal(0);
    const failure = await withClient(acmeUrl, async () => 'connected').catch((error: Error) => error.message);
    expect(failure).to.match(/password authentication failed|does not exist/);
  });

  it('puts a database on dedicated compute, resizes it and deletes the instance, its status followed live', async function () {
    this.timeout(240_000);
    await page.getByLabel('Database name').fill('scratch');
    await page.getByRole('button', { name: 'Create database' }).click();
    const row = page.locator('tr[data-database="scratch"]');
    await row.locator('.status', { hasText: 'READY' }).waitFor({ timeout: 60_000 });
    await row.getByRole('button', { name: 'scratch' }).click();
    await page.getByRole('tab', { name: 'Compute' }).click();
    const options = page.getByLabel('Instance size', { exact: true }).locator('option');
    await eventually(async () => ((await options.count()) >= 2 ? true : undefined), 10_000, 'two compute types to choose from');
    const sizes = await options.allInnerTexts();
    await page.getByLabel('Instance name').fill('scratch-1');
    await page.getByLabel('Instance size').selectOption(sizes[0]);
    await page.getByRole('button', { name: 'Create instance' }).click();
    const instance = page.locator('tr[data-instance="scratch-1"]');
    await instance.locator('.status', { hasText: 'READY' }).waitFor({ timeout: 90_000 });
    await snapshot('compute-ready');
    await instance.getByLabel('New size').selectOption(sizes[1]);
    await instance.getByRole('button', { name: 'Resize' }).click();
    await eventually(async () => ((await instance.innerText()).includes(sizes[1]) && (await instance.locator('.status').innerText()) === 'READY' ? true : undefined), 90_000, 'the resize');
    await instance.getByRole('button', { name: 'Delete' }).click();
    await instance.locator('.status', { hasText: 'TERMINATED' }).waitFor({ timeout: 90_000 });
  });

  it('renames a database and deletes it', async function () {
    const row = page.locator('tr[data-database="scratch"]');
    await row.getByRole('button', { name: 'Rename' }).click();
    await row.getByLabel('New name').fill('scratch_2');
    await row.getByRole('button', { name: 'Save' }).click();
    const renamed = page.locator('tr[data-database="scratch_2"]');
    await renamed.waitFor();
    expect(await page.locator('tr[data-database="scratch"]').count()).to.equal(0);
    await renamed.getByRole('button', { name: 'Delete' }).click();
    await renamed.waitFor({ state: 'detached', timeout: 15_000 });
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('console.session') ?? '{}').accessToken as string);
    const gone = await p.request('GET', `/workspaces/${slug}/databases/scratch_2`, { token });
    expect(gone.status, gone.text).to.equal(404);
    await snapshot('databases');
  });

  it('refreshes a token about to end with its refresh token, and goes on', async function () {
    const before = await page.evaluate(() => JSON.parse(sessionStorage.getItem('console.session')!) as { accessToken: string; expiresAt: number });
    await page.evaluate((session) => sessionStorage.setItem('console.session', JSON.stringify({ ...session, expiresAt: Date.now() })), before);
    await page.locator('tr[data-database="shop"]').getByRole('button', { name: 'shop' }).click();
    await page.getByRole('tab', { name: 'Credentials' }).click();
    await page.locator('[data-credential]').first().waitFor();
    const after = await page.evaluate(() => JSON.parse(sessionStorage.getItem('console.session')!) as { accessToken: string; expiresAt: number });
    expect(after.accessToken).not.to.equal(before.accessToken);
    expect(after.expiresAt).to.be.greaterThan(Date.now() + 60_000);
  });

  it('signs out: the token is gone from the tab, its refresh token is revoked, and the page asks to sign in again', async function () {
    const { refreshToken } = JSON.parse((await page.evaluate(() => sessionStorage.getItem('console.session')))!);
    expect(refreshToken).to.be.a('string');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('console.session'))).to.equal(null);
    const refreshed = await fetch(`${p.api.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'platform-console', refresh_token: refreshToken }),
    });
    expect([refreshed.status, ((await refreshed.json()) as { error: string }).error]).to.deep.equal([400, 'invalid_grant']);
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
  });

  it('loaded nothing from elsewhere and had nothing refused by its policy (one failed request: the SSO refusal)', async function () {
    const refused = consoleLines.filter((line) => /Content Security Policy|Refused to|Failed to load/i.test(line));
    // The SSO provider refused on purpose above is the one failed request the browser reports.
    expect(refused, refused.join('\n')).to.deep.equal(['error: Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    const elsewhere = requested.filter((url) => !url.startsWith(`${TEST_AUDIENCE}/`) && !url.startsWith(`${TEST_ISSUER}/`) && !url.startsWith('data:'));
    expect(elsewhere).to.deep.equal([]);
  });
});

/**
 * Points at the bucket `index` of `count` on the chart and reads the figure its legend shows
 * there: the time axis spans the first to the last bucket evenly, and the cursor snaps to the
 * nearest. The pointer enters the plot first (uPlot measures the plot's place then).
 */
async function legendAt(page: Page, chart: Locator, index: number, count: number): Promise<string> {
  const value = chart.locator('.u-legend .u-series').nth(1).locator('.u-value');
  return eventually(
    async () => {
      const box = (await chart.locator('.u-over').boundingBox())!;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 2 });
      // Inside the plot's box even for the first and last buckets, on its edges (the nearest bucket is taken).
      const x = count === 1 ? box.width / 2 : Math.min(Math.max((index / (count - 1)) * box.width, 1), box.width - 2);
      await page.mouse.move(box.x + x, box.y + box.height / 2, { steps: 2 });
      const shownThere = (await value.innerText()).trim();
      return shownThere === '–' ? undefined : shownThere;
    },
    5_000,
    'a figure in the chart’s legend',
  );
}

/** The test platform's gateway allows plain connections: sslmode=require is left out. */
async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const parsed = new URL(url);
  parsed.searchParams.delete('sslmode');
  const client = new pg.Client({ connectionString: parsed.href });
  client.on('error', () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

import { expect } from 'chai';
import { createDatabase, developerWithWorkspace, expectApiError, uniqueDatabaseName } from '@platform/test-fixtures';
import { createTenant, createUser, developerWithReadyDatabase, loginUser } from './support/fixtures.js';
import { platform, type TestPlatform } from './support/platform.js';

/** The next page's address from a Link header, or null on the last page. */
function nextLink(headers: Headers): string | null {
  const link = headers.get('link');
  if (link === null) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  expect(match, link).to.not.equal(null);
  return match![1];
}

describe('paged lists', function () {
  this.timeout(60_000);
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  /** Follows Link rel="next" from `first` to the last page; answers each page's ids. */
  async function walk(first: string, token: string, between?: () => Promise<void>, key = 'id'): Promise<string[][]> {
    const pages: string[][] = [];
    for (let next: string | null = first; next !== null; ) {
      const page = await p.request('GET', next, { token });
      expect(page.status, page.text).to.equal(200);
      pages.push((page.body as Record<string, string>[]).map((item) => item[key]));
      next = nextLink(page.headers);
      if (between) await between();
    }
    return pages;
  }

  it('pages tenants by limit and cursor, each tenant once, in order, whatever is added meanwhile', async function () {
    const owner = await developerWithReadyDatabase(p);
    const tenants = [];
    for (let i = 0; i < 5; i++) tenants.push(await createTenant(p, owner.token, owner.D, { name: `t${i}` }));
    const ids = tenants.map((tenant) => tenant.id);

    const all = await p.request('GET', `${owner.D}/tenants`, { token: owner.token });
    expect((all.body as { id: string }[]).map((tenant) => tenant.id)).to.deep.equal(ids);
    expect(all.headers.get('link')).to.equal(null);

    const added: string[] = [];
    const pages = await walk(`${owner.D}/tenants?limit=2`, owner.token, async () => {
      added.push((await createTenant(p, owner.token, owner.D, { name: `added${added.length}` })).id);
    });
    // Each page but the last is full; the tenants that were there throughout come once each, in order.
    expect(pages.slice(0, -1).every((page) => page.length === 2)).to.equal(true);
    const seen = pages.flat();
    expect(new Set(seen).size).to.equal(seen.length);
    expect(seen.filter((id) => ids.includes(id))).to.deep.equal(ids);
    expect(seen.slice(0, 5)).to.deep.equal(ids);
  });

  it('carries other query fields into the next link, and refuses a cursor or limit it did not give', async function () {
    const owner = await developerWithReadyDatabase(p);
    for (let i = 0; i < 3; i++) await createTenant(p, owner.token, owner.D, { name: `t${i}` });
    const first = await p.request('GET', `${owner.D}/tenants?limit=1`, { token: owner.token });
    const next = nextLink(first.headers)!;
    expect(next).to.match(new RegExp(`^${owner.D}/tenants\\?limit=1&cursor=[A-Za-z0-9_-]+$`));
    for (const bad of ['nope', 'bm9wZQ', Buffer.from('v1:00000000-0000-4000-8000-000000000000').toString('base64url')]) {
      expectApiError(await p.request('GET', `${owner.D}/tenants?cursor=${bad}`, { token: owner.token }), 400, 'invalid_cursor');
    }
    for (const limit of ['0', '1001', '-1', '1e2', 'ten']) {
      expectApiError(await p.request('GET', `${owner.D}/tenants?limit=${limit}`, { token: owner.token }), 400, 'validation_failed');
    }
    // A cursor of one database means nothing in another.
    const other = await developerWithReadyDatabase(p);
    const cursor = new URL(next, 'http://x').searchParams.get('cursor');
    expectApiError(await p.request('GET', `${other.D}/tenants?cursor=${cursor}`, { token: other.token }), 400, 'invalid_cursor');
  });

  it('pages a tenant’s members, and a user’s own tenants', async function () {
    const owner = await developerWithReadyDatabase(p);
    const tenant = await createTenant(p, owner.token, owner.D);
    const T = `${owner.D}/tenants/${tenant.id}`;
    const users = [];
    for (let i = 0; i < 5; i++) users.push(await createUser(p, owner.token, T));
    const members = await walk(`${T}/users?limit=2`, owner.token);
    expect(members.map((page) => page.length)).to.deep.equal([2, 2, 1]);
    expect(members.flat()).to.deep.equal(users.map((user) => user.id));

    // A user's tenants: theirs only, paged the same way.
    const more = [tenant.id];
    for (let i = 0; i < 2; i++) {
      const extra = await createTenant(p, owner.token, owner.D);
      expect((await p.request('PUT', `${owner.D}/tenants/${extra.id}/users/${users[0].id}/link`, { token: owner.token })).status).to.equal(200);
      more.push(extra.id);
    }
    await createTenant(p, owner.token, owner.D);
    const session = await loginUser(p, owner.D, users[0]);
    expect((await walk(`${owner.D}/tenants?limit=2`, session.jwt)).flat()).to.deep.equal(more);
  });

  it('pages the control plane’s lists the same way, and a page continues after an item deleted since', async function () {
    const owner = await developerWithWorkspace(p);
    const W = `/workspaces/${owner.slug}`;
    const names = [];
    for (let i = 0; i < 4; i++) names.push((await createDatabase(p, owner.token, owner.slug, uniqueDatabaseName(`pg${i}`))).name as string);
    const first = await p.request('GET', `${W}/databases?limit=2`, { token: owner.token });
    expect((first.body as { name: string }[]).map((database) => database.name)).to.deep.equal(names.slice(0, 2));
    // The page's last database goes; the next page still starts right after where it was.
    expect((await p.request('DELETE', `${W}/databases/${names[1]}`, { token: owner.token })).status).to.equal(200);
    const rest = await walk(nextLink(first.headers)!, owner.token, undefined, 'name');
    expect(rest.flat()).to.deep.equal(names.slice(2));

    for (let i = 0; i < 3; i++) {
      const created = await p.request('POST', `${W}/oauth-clients`, { token: owner.token, json: { name: `client ${i}`, type: 'confidential' } });
      expect(created.status, created.text).to.equal(201);
    }
    const clients = await walk(`${W}/oauth-clients?limit=2`, owner.token, undefined, 'client_id');
    expect(clients.map((page) => page.length)).to.deep.equal([2, 1]);
    const everyClient = ((await p.request('GET', `${W}/oauth-clients`, { token: owner.token })).body as { client_id: string }[]).map((client) => client.client_id);
    expect(clients.flat()).to.deep.equal(everyClient);

    for (let i = 0; i < 2; i++) expect((await p.request('POST', '/workspaces', { token: owner.token, json: { name: `extra ${i}` } })).status).to.equal(201);
    const workspaces = await walk('/workspaces?limit=1', owner.token);
    expect(workspaces.map((page) => page.length)).to.deep.equal([1, 1, 1]);
    expect(new Set(workspaces.flat()).size).to.equal(3);
    expect((await p.request('GET', `${W}/members?limit=1`, { token: owner.token })).headers.get('link')).to.equal(null);
    expectApiError(await p.request('GET', `${W}/databases?cursor=${Buffer.from('v2:abc:x').toString('base64url')}`, { token: owner.token }), 400, 'invalid_cursor');
    // Databases page in SQL after the database the cursor names: one of another workspace, or none, is refused.
    const stranger = await developerWithWorkspace(p);
    const theirs = await createDatabase(p, stranger.token, stranger.slug, uniqueDatabaseName('theirs'));
    for (const id of [theirs.id as string, '00000000-0000-4000-8000-000000000000']) {
      expectApiError(await p.request('GET', `${W}/databases?cursor=${Buffer.from(`v1:${id}`).toString('base64url')}`, { token: owner.token }), 400, 'invalid_cursor');
    }
  });

  it('compresses a big list when asked', async function () {
    const owner = await developerWithReadyDatabase(p);
    for (let i = 0; i < 12; i++) await createTenant(p, owner.token, owner.D, { name: `a tenant with a longish name ${i}` });
    const get = (encoding: string) =>
      fetch(`${p.api.url}${owner.D}/tenants`, { headers: { authorization: `Bearer ${owner.token}`, 'accept-encoding': encoding } });
    const gzipped = await get('gzip');
    expect(gzipped.headers.get('content-encoding')).to.equal('gzip');
    expect(((await gzipped.json()) as unknown[]).length).to.equal(12);
    expect((await get('br')).headers.get('content-encoding')).to.equal('br');
    expect((await get('identity')).headers.get('content-encoding')).to.equal(null);
    // Answers that must not be stored are never compressed: libs/http/src/app.test.ts.
  });
});

import { expect } from 'chai';
import { developerWithWorkspace, expectApiError, uniqueSlug } from '@platform/test-fixtures';
import { platform, SERVED_REGIONS, type TestPlatform } from './support/platform.js';

describe('workspaces', function () {
  let p: TestPlatform;
  before(async function () {
    p = await platform();
  });

  describe('POST /workspaces', function () {
    it('creates a workspace owned by the caller, with the SPEC fields', async function () {
      const { token } = await p.controlPlane.newDeveloper();
      const slug = uniqueSlug();
      const created = await p.request('POST', '/workspaces', { token, json: { name: 'Acme', slug } });
      expect(created.status).to.equal(201);
      expect(created.headers.get('location')).to.equal(`/workspaces/${slug}`);
      expect(created.body).to.have.all.keys('id', 'name', 'slug', 'billing_customer_id', 'created');
      expect(created.body).to.include({ name: 'Acme', slug, billing_customer_id: null });
      expect(created.body.id).to.match(/^[0-9a-f-]{36}$/);
      expect(new Date(created.body.created).toISOString()).to.equal(created.body.created);
      const fetched = await p.request('GET', `/workspaces/${slug}`, { token });
      expect(fetched.status).to.equal(200);
      expect(fetched.body).to.deep.equal(created.body);
    });

    it('derives a slug from the name, and a different one when that is taken', async function () {
      const name = `Shop ${uniqueSlug()}`;
      const first = await p.request('POST', '/workspaces', { token: (await p.controlPlane.newDeveloper()).token, json: { name } });
      const second = await p.request('POST', '/workspaces', { token: (await p.controlPlane.newDeveloper()).token, json: { name } });
      expect(first.status).to.equal(201);
      expect(second.status).to.equal(201);
      expect(first.body.slug).to.equal(name.toLowerCase().replace(/ /g, '-'));
      expect(second.body.slug).to.match(new RegExp(`^${first.body.slug}-[a-f0-9]{6}$`));
    });

    it('answers 409 workspace_slug_taken for an explicit slug in use, and creates nothing', async function () {
      const { slug } = await developerWithWorkspace(p);
      const other = await p.controlPlane.newDeveloper();
      const taken = await p.request('POST', '/workspaces', { token: other.token, json: { name: 'Other', slug } });
      expectApiError(taken, 409, 'workspace_slug_taken');
      const mine = await p.request('GET', '/workspaces', { token: other.token });
      expect(mine.body).to.deep.equal([]);
    });

    const badBodies: [string, unknown, RegExp][] = [
      ['a missing name', {}, /body\.name: is required/],
      ['a name of the wrong type', { name: 42 }, /body\.name: expected string/],
      ['an empty name', { name: '' }, /body\.name/],
      ['a name over 100 characters', { name: 'x'.repeat(101) }, /body\.name/],
      ['a huge name', { name: 'x'.repeat(60_000) }, /body\.name/],
      ['an unknown field', { name: 'ok', owner: 'me' }, /body\.owner: unknown field/],
      ['a slug with capitals', { name: 'ok', slug: 'Bad-Slug' }, /body\.slug/],
      ['a slug too short', { name: 'ok', slug: 'ab' }, /body\.slug/],
      ['a slug with a double hyphen', { name: 'ok', slug: 'a--b' }, /body\.slug/],
      ['an array', [{ name: 'ok' }], /body: expected object/],
    ];
    for (const [what, body, message] of badBodies) {
      it(`refuses ${what} with 400 and creates nothing`, async function () {
        const { token } = await p.controlPlane.newDeveloper();
        const response = await p.request('POST', '/workspaces', { token, json: body });
        expectApiError(response, 400, 'validation_failed');
        expect(response.body.message).to.match(message);
        expect(response.body.message.length).to.be.below(600);
        expect((await p.request('GET', '/workspaces', { token })).body).to.deep.equal([]);
      });
    }

    it('refuses malformed JSON, a wrong content type and an oversized body with 4xx APIErrors', async function () {
      const { token } = await p.controlPlane.newDeveloper();
      expectApiError(await p.request('POST', '/workspaces', { token, raw: '{"name": ', contentType: 'application/json' }), 400, 'malformed_json');
      expectApiError(await p.request('POST', '/workspaces', { token, raw: 'name=x', contentType: 'application/x-www-form-urlencoded' }), 415, 'unsupported_content_type');
      expectApiError(await p.request('POST', '/workspaces', { token, raw: '"just a string"', contentType: 'application/json' }), 400, 'malformed_json');
      expectApiError(await p.request('POST', '/workspaces', { token, raw: 'null', contentType: 'application/json' }), 400, 'malformed_json');
      expectApiError(await p.request('POST', '/workspaces', { token, json: { name: 'nul\u0000byte' } }), 400, 'validation_failed');
      expectApiError(await p.request('POST', '/workspaces', { token, raw: JSON.stringify({ name: 'x'.repeat(200_000) }), contentType: 'application/json' }), 413, 'payload_too_large');
      expectApiError(await p.request('POST', '/workspaces', { token }), 400, 'validation_failed');
      expect((await p.request('GET', '/workspaces', { token })).body).to.deep.equal([]);
    });

    it('answers 401 without a token, before looking at the body', async function () {
      expectApiError(await p.request('POST', '/workspaces', { json: { name: 'x' } }), 401, 'unauthorized');
      expectApiError(await p.request('POST', '/workspaces', { raw: '{bad', contentType: 'application/json' }), 401);
    });
  });

  describe('GET /workspaces', function () {
    it('lists only the workspaces the caller belongs to, oldest first', async function () {
      const { token } = await p.controlPlane.newDeveloper();
      const slugs = [uniqueSlug('a'), uniqueSlug('b')];
      for (const slug of slugs) expect((await p.request('POST', '/workspaces', { token, json: { name: slug, slug } })).status).to.equal(201);
      await developerWithWorkspace(p);
      const listed = await p.request('GET', '/workspaces', { token });
      expect(listed.status).to.equal(200);
      expect(listed.body.map((w: { slug: string }) => w.slug)).to.deep.equal(slugs);
    });
  });

  describe('GET /workspaces/{slug}', function () {
    it('answers 404 for another developer’s workspace exactly as for a missing one', async function () {
      const { slug } = await developerWithWorkspace(p);
      const { token } = await p.controlPlane.newDeveloper();
      const hidden = await p.request('GET', `/workspaces/${slug}`, { token });
      const missing = await p.request('GET', `/workspaces/${slug}-missing`, { token });
      expectApiError(hidden, 404, 'workspace_not_found');
      expectApiError(missing, 404, 'workspace_not_found');
      expect(hidden.body.message.replace(slug, 'X')).to.equal(missing.body.message.replace(`${slug}-missing`, 'X'));
    });

    it('answers 400 for slugs no workspace may have and 404 for the rest of the odd ones', async function () {
      const { token } = await p.controlPlane.newDeveloper();
      const cases: [string, number, string][] = [
        ['%E0%A4%A', 404, 'workspace_not_found'],
        ['..%2F..%2Fetc', 404, 'workspace_not_found'],
        ['x'.repeat(300), 400, 'validation_failed'],
        ['%00', 400, 'validation_failed'],
        ["'; drop table workspaces; --", 404, 'workspace_not_found'],
      ];
      for (const [odd, status, errorCode] of cases) {
        const response = await p.request('GET', `/workspaces/${encodeURI(odd).replace(/%25/g, '%')}`, { token });
        expect(response.status, odd).to.equal(status);
        expectApiError(response, status, errorCode);
      }
    });
  });

  describe('GET /workspaces/{slug}/regions', function () {
    it('lists the configured regions', async function () {
      const { token, slug } = await developerWithWorkspace(p);
      const regions = await p.request('GET', `/workspaces/${slug}/regions`, { token });
      expect(regions.status).to.equal(200);
      expect(regions.body).to.deep.equal(SERVED_REGIONS);
    });

    it('answers 404 for a workspace the caller is not in', async function () {
      const { slug } = await developerWithWorkspace(p);
      const { token } = await p.controlPlane.newDeveloper();
      expectApiError(await p.request('GET', `/workspaces/${slug}/regions`, { token }), 404, 'workspace_not_found');
    });
  });
});

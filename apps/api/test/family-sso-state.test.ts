import { expect } from 'chai';
import { requireSecretBox } from '@platform/auth';
import { FAMILY_SSO_STATE_PURPOSE, familySsoStateContext } from '@platform/domain';
import { query } from '@platform/testing';
import { expectApiError } from '@platform/test-fixtures';
import { developerWithReadyDatabase } from './support/fixtures.js';
import { CookieJar } from './support/sdk-app.js';
import { read, setCookie, startFamilySsoWorld, type FamilySsoWorld } from './support/family-sso.js';

/**
 * The family surface's SSO state lives in the browser's `nile.sso-state` cookie, sealed: every
 * request comes from the app's server (one client address for all its visitors), so nothing a
 * visitor starts is stored or counted against that address; the callback spends the state once.
 */
describe('the API family’s SSO state: sealed in nile.sso-state, spent once', function () {
  this.timeout(120_000);
  let w: FamilySsoWorld;
  const count = async (table: string) => Number((await query<{ n: string }>(w.p.controlPlane.url, `select count(*) as n from ${table}`))[0].n);

  before(async function () {
    w = await startFamilySsoWorld();
  });

  after(async function () {
    await w?.close();
  });

  /** A sign-in started at the app and through the provider: the callback's query and the browser holding the cookie. */
  async function underWay() {
    const jar = new CookieJar();
    jar.set('nile.tenant-id', w.tenantA);
    const started = await w.startAtApp(jar, 'corp');
    expect(started.status, started.text).to.equal(200);
    const back = await w.op.signIn(started.body.url, w.account().sub);
    return { jar, back, sealed: jar.get('nile.sso-state')! };
  }

  const callbackWith = (back: URL, cookie: string) =>
    w.request('GET', `${w.base}/auth/callback/corp${back.search}`, { headers: { ...w.sdkHeaders, cookie: `nile.sso-state=${cookie}` } });

  it('lets an anonymous visitor start 150 sign-ins through the app, storing nothing, and a user then signs in as usual', async function () {
    const [pendingBefore, spentBefore] = [await count('sso_login_states'), await count('sso_spent_states')];
    const visitor = new CookieJar();
    visitor.set('nile.tenant-id', w.tenantA);
    const csrf = await fetch(`${w.APP}/api/auth/csrf`);
    visitor.take(csrf);
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const statuses = new Map<number, number>();
    for (let i = 0; i < 150; i++) {
      const started = await fetch(`${w.APP}/api/auth/signin/corp`, {
        method: 'POST',
        headers: { cookie: visitor.header(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrfToken, json: 'true' }).toString(),
      });
      await started.arrayBuffer();
      statuses.set(started.status, (statuses.get(started.status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).to.deep.equal({ 200: 150 });
    expect(await count('sso_login_states')).to.equal(pendingBefore);
    expect(await count('sso_spent_states')).to.equal(spentBefore);

    const { email, sub } = w.account();
    const jar = new CookieJar();
    const { finished } = await w.signInAtApp(jar, w.tenantA, 'corp', sub);
    expect(finished.status, await finished.clone().text()).to.equal(302);
    const session = await read(await fetch(`${w.APP}/api/auth/session`, { headers: { cookie: jar.header() } }));
    expect(session.body.user.email).to.equal(email);
    // Only the finished sign-in's state is kept, spent.
    expect(await count('sso_spent_states')).to.equal(spentBefore + 1);
  });

  it('refuses a replayed callback, through the app and directly, signing no one in', async function () {
    const { jar, back, sealed } = await underWay();
    const first = await fetch(back, { redirect: 'manual', headers: { cookie: jar.header() } });
    expect(first.status).to.equal(302);
    const replayedAtApp = await read(await fetch(back, { redirect: 'manual', headers: { cookie: `nile.tenant-id=${w.tenantA}; nile.sso-state=${sealed}` } }));
    expectApiError(replayedAtApp, 400, 'session_state_mismatch');
    expect(replayedAtApp.body.message).to.equal('This sign-in has finished already: start it again');
    expect(setCookie(replayedAtApp, 'nile.session-token')).to.equal(undefined);
    const replayed = await callbackWith(back, sealed);
    expectApiError(replayed, 400, 'session_state_mismatch');
    expect(replayed.headers.getSetCookie()).to.deep.equal([]);
  });

  it('refuses an altered, foreign or expired state cookie (400, no cookie set), and those refusals spend nothing', async function () {
    const { back, sealed } = await underWay();
    const unknown = 'This sign-in is unknown, expired or was started for another database: start it again';
    const [version, keyId, iv, body] = sealed.split('.');
    const flipped = `${body.slice(0, 10)}${body[10] === 'A' ? 'B' : 'A'}${body.slice(11)}`;
    const box = requireSecretBox(w.p.env, 'SIGNING_KEY_SECRET_KEYS', 'the platform’s ring').derive(FAMILY_SSO_STATE_PURPOSE);
    const context = familySsoStateContext(w.owner.database.id);
    const content = JSON.parse(box.open(sealed, context)) as { expires: number; state: string };
    expect(content.expires - Date.now()).to.be.within(590_000, 600_000);
    expect(content.state).to.equal(back.searchParams.get('state'));
    const attempts: [string, string][] = [
      ['one byte of the ciphertext changed', [version, keyId, iv, flipped].join('.')],
      ['another key id', [version, 'other', iv, body].join('.')],
      ['not a sealed value', 'garbage'],
      ['sealed by the platform’s signing-key ring itself, not the ring derived for this cookie', requireSecretBox(w.p.env, 'SIGNING_KEY_SECRET_KEYS', 'x').seal(JSON.stringify(content), context)],
      ['expired (sealed with the right keys, ten minutes gone)', box.seal(JSON.stringify({ ...content, expires: Date.now() - 1000 }), context)],
    ];
    for (const [what, cookie] of attempts) {
      const refused = await callbackWith(back, cookie);
      expectApiError(refused, 400, 'session_state_mismatch');
      expect(refused.body.message, what).to.equal(unknown);
      expect(refused.headers.getSetCookie(), what).to.deep.equal([]);
    }
    expectApiError(await w.request('GET', `${w.base}/auth/callback/corp${back.search}`, { headers: w.sdkHeaders }), 400, 'session_state_missing');
    // The genuine cookie still finishes the sign-in.
    const finished = await callbackWith(back, sealed);
    expect(finished.status, finished.text).to.equal(200);
    expect(setCookie(finished, 'nile.session-token')).to.match(/^nile\.session-token=[\w-]{43};/);
  });

  it('refuses database X’s state at database Y, even sealed with the right keys for X', async function () {
    const other = await developerWithReadyDatabase(w.p);
    const { back, sealed } = await underWay();
    const atY = await w.request('GET', `/v2/databases/${other.database.id}/auth/callback/corp${back.search}`, {
      headers: { ...w.sdkHeaders, cookie: `nile.sso-state=${sealed}` },
    });
    expectApiError(atY, 400, 'session_state_mismatch');
    expect(atY.headers.getSetCookie()).to.deep.equal([]);
    // X's content resealed for Y's context still names X: refused all the same.
    const box = requireSecretBox(w.p.env, 'SIGNING_KEY_SECRET_KEYS', 'x').derive(FAMILY_SSO_STATE_PURPOSE);
    const moved = box.seal(box.open(sealed, familySsoStateContext(w.owner.database.id)), familySsoStateContext(other.database.id));
    const movedAtY = await w.request('GET', `/v2/databases/${other.database.id}/auth/callback/corp${back.search}`, {
      headers: { ...w.sdkHeaders, cookie: `nile.sso-state=${moved}` },
    });
    expectApiError(movedAtY, 400, 'session_state_mismatch');
    // Still X's to finish.
    expect((await callbackWith(back, sealed)).status).to.equal(200);
  });

  it('answers tenant_required for a nile.tenant-id cookie that is no tenant id, malformed percent-encoding included', async function () {
    const csrf = await w.request('GET', `${w.base}/auth/csrf`, { headers: w.sdkHeaders });
    const csrfCookie = setCookie(csrf, 'nile.csrf-token')!.split(';')[0];
    for (const tenant of ['%E0%A4%A', '%', 'not-a-uuid', '']) {
      const refused = await w.request('POST', `${w.base}/auth/signin/corp`, {
        headers: { ...w.sdkHeaders, cookie: `${csrfCookie}; nile.tenant-id=${tenant}` },
        json: { csrfToken: csrf.body.csrfToken },
      });
      expectApiError(refused, 400, 'tenant_required');
      expect(refused.headers.getSetCookie(), tenant).to.deep.equal([]);
    }
  });
});

// signIn of users.ts: the throttled password sign-in of a database's users.
import { expect } from 'chai';
import { failure } from './assertions.test-support.js';
import { fakePlatform } from './fakes.test-support.js';
import { signIn } from './users.js';

const authenticationFailed = { name: 'UnauthenticatedError', kind: 'unauthenticated', code: 'authentication_failed', message: 'Email or password is incorrect' };
const ADDRESS = '203.0.113.5';

function tooManyAttempts(retryAfterSeconds: number) {
  return { name: 'RateLimitedError', kind: 'rate_limited', code: 'too_many_attempts', message: 'Too many failed attempts; try again later', retryAfterSeconds };
}

/** A platform where ada (`Ada@Example.com`, password `correct horse`) belongs to one tenant of acme/main. */
async function withAda() {
  const p = fakePlatform();
  const tenant = await p.tenant('Home');
  const ada = await p.user('Ada@Example.com', 'correct horse', [tenant]);
  return { p, tenant, ada, accountKey: `user:${p.main.id}:${ada.user.id}` };
}

describe('user sign-in (signIn)', () => {
  it('signs a user in with a new session and token, throttled as their account from the address', async () => {
    const { p, tenant, ada, accountKey } = await withAda();
    const result = await signIn(p.deps, { workspaceSlug: 'acme', databaseName: 'main' }, { email: ' ada@example.com ', password: 'correct horse' }, ADDRESS);
    const session = p.data.sessions[p.data.sessions.length - 1];
    expect(result).to.deep.equal({
      user: ada.user,
      tenantIds: [tenant.id],
      token: { jwt: `jwt:${ada.user.id}:${p.main.id}:${session.id}`, maxAge: 3600, type: 'ACCESS_TOKEN' },
      session: { token: session.token, maxAge: 86_400 },
    });
    expect(session.userId).to.equal(ada.user.id);
    expect(p.deps.throttle.outcomes).to.deep.equal([{ subject: { account: accountKey, address: ADDRESS }, ok: true }]);
    expect(p.deps.hasher.verifications).to.deep.equal(['verify:correct horse']);
  });

  it('signs a member in to their tenant', async () => {
    const { p, tenant, ada } = await withAda();
    const result = await signIn(p.deps, { workspaceSlug: 'acme', databaseName: 'main', tenantId: tenant.id }, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS);
    expect(result.user).to.deep.equal(ada.user);
    expect(result.tenantIds).to.deep.equal([tenant.id]);
  });

  describe('answers every failure with the same 401, after exactly one password verification', () => {
    type World = Awaited<ReturnType<typeof withAda>>;
    const cases: {
      what: string;
      path?: { workspaceSlug: string; databaseName: string };
      /** Sign in to ada's tenant rather than to the whole database. */
      toTenant?: boolean;
      email?: string;
      password?: string;
      verified: string;
      prepare?: (world: World) => Promise<unknown> | void;
    }[] = [
      { what: 'an unknown email', email: 'nobody@example.com', verified: 'verifyNothing:correct horse' },
      { what: 'a wrong password', password: 'wrong horse', verified: 'verify:wrong horse' },
      { what: 'a database that does not exist', path: { workspaceSlug: 'acme', databaseName: 'missing' }, verified: 'verifyNothing:correct horse' },
      { what: 'a workspace that does not exist', path: { workspaceSlug: 'nowhere', databaseName: 'main' }, verified: 'verifyNothing:correct horse' },
      { what: 'a database that is not READY', path: { workspaceSlug: 'acme', databaseName: 'building' }, verified: 'verifyNothing:correct horse' },
      { what: 'a database dropped while the path was cached', verified: 'verifyNothing:correct horse', prepare: ({ p }) => void (p.data.dropped = true) },
      {
        what: 'a tenant the user does not belong to',
        toTenant: true,
        verified: 'verify:correct horse',
        prepare: ({ p, ada, tenant }) => p.data.repositories.users.unlink(tenant.id, ada.user.id),
      },
    ];

    for (const { what, path, toTenant, email, password, verified, prepare } of cases) {
      it(what, async () => {
        const world = await withAda();
        await prepare?.(world);
        const { p } = world;
        const target = { ...(path ?? { workspaceSlug: 'acme', databaseName: 'main' }), ...(toTenant ? { tenantId: world.tenant.id } : {}) };
        const attempt = signIn(p.deps, target, { email: email ?? 'ada@example.com', password: password ?? 'correct horse' }, ADDRESS);
        expect(await failure(attempt)).to.deep.equal(authenticationFailed);
        expect(p.deps.hasher.verifications).to.deep.equal([verified]);
        expect(p.deps.throttle.outcomes.map(({ ok }) => ok)).to.deep.equal([false]);
        expect(p.data.sessions).to.have.length(1);
      });
    }
  });

  describe('throttling', () => {
    const main = { workspaceSlug: 'acme', databaseName: 'main' };

    it('throttles an email no account has by its typed spelling in that database, and counts the failure', async () => {
      const { p } = await withAda();
      await failure(signIn(p.deps, main, { email: ' Nobody@Example.com ', password: 'correct horse' }, ADDRESS));
      expect(p.deps.throttle.outcomes).to.deep.equal([{ subject: { account: 'email:acme/main:nobody@example.com', address: ADDRESS }, ok: false }]);
      p.deps.throttle.waiting.set('email:acme/main:nobody@example.com', 42);
      expect(await failure(signIn(p.deps, main, { email: 'NOBODY@example.com', password: 'correct horse' }, ADDRESS))).to.deep.equal(tooManyAttempts(42));
    });

    it('answers 429 while the account waits, whatever spelling of its email is typed, before any verification', async () => {
      const { p, accountKey } = await withAda();
      p.deps.throttle.waiting.set(accountKey, 30);
      const attempt = signIn(p.deps, main, { email: 'ADA@EXAMPLE.COM', password: 'correct horse' }, ADDRESS);
      expect(await failure(attempt)).to.deep.equal(tooManyAttempts(30));
      expect(p.deps.hasher.verifications).to.deep.equal([]);
      expect(p.data.sessions).to.have.length(1);
    });

    it('answers 429 while the address waits, before any verification', async () => {
      const { p } = await withAda();
      p.deps.throttle.waiting.set(ADDRESS, 7);
      expect(await failure(signIn(p.deps, main, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS))).to.deep.equal(tooManyAttempts(7));
      expect(p.deps.hasher.verifications).to.deep.equal([]);
    });
  });

  describe('the hashing queue (issue 46)', () => {
    const main = { workspaceSlug: 'acme', databaseName: 'main' };

    it('takes a place for the typed email, the address and the database first, and gives it back on every outcome', async () => {
      const { p, tenant, accountKey } = await withAda();
      await signIn(p.deps, main, { email: 'Ada@example.com', password: 'correct horse' }, ADDRESS);
      await failure(signIn(p.deps, { ...main, tenantId: tenant.id }, { email: 'ada@example.com', password: 'wrong horse' }, ADDRESS));
      p.deps.throttle.waiting.set(accountKey, 30);
      await failure(signIn(p.deps, main, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS));
      const claim = { account: 'email:acme/main:ada@example.com', address: ADDRESS, database: 'acme/main' };
      expect(p.deps.hasher.claims).to.deep.equal([claim, claim, claim]);
      expect(p.deps.hasher.held).to.equal(0);
    });

    it('past its share, answers the queue’s 429 before reading anything: no lookup, no throttle, no verification', async () => {
      const { p } = await withAda();
      const lookups: string[] = [];
      const findBySlugAndName = p.deps.locator.findBySlugAndName.bind(p.deps.locator);
      p.deps.locator.findBySlugAndName = async (slug, name) => {
        lookups.push(`${slug}/${name}`);
        return findBySlugAndName(slug, name);
      };
      p.deps.hasher.refuseWith = 3;
      expect(await failure(signIn(p.deps, main, { email: 'ada@example.com', password: 'correct horse' }, ADDRESS))).to.deep.equal({
        ...tooManyAttempts(3),
        message: 'Too many sign-ins under way; try again shortly',
      });
      expect([lookups, p.deps.throttle.outcomes, p.deps.hasher.verifications, p.deps.hasher.held]).to.deep.equal([[], [], [], 0]);
    });
  });
});

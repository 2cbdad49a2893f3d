import { expect } from 'chai';
import { Server } from '@niledatabase/server';
import { httpClient } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';

/** The app built on the SDK: where its pages live, named by its `origin` setting and ALLOWED_ORIGINS. */
const APP_ORIGIN = 'http://app.test';

/**
 * The API family's published server SDK (@niledatabase/server 5.3.1), unmodified, configured
 * against this platform as README "Apps built on the family's SDK" says: its auth API calls
 * (cookies, CSRF double submit) against a real API, its SQL through the real gateway. Sign-up
 * is on, and members may delete tenants and add users, as an app built on the SDK expects.
 */
describe('the API family’s server SDK against the family auth API', function () {
  this.timeout(120_000);
  let p: TestPlatform;
  let api: RunningApi;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let connection: URL;

  before(async function () {
    p = await platform();
    api = await startApi(
      loadApiConfig({
        ...p.env,
        ALLOWED_ORIGINS: APP_ORIGIN,
        SELF_SIGN_UP: 'true',
        TENANT_MEMBERS_DELETE_TENANTS: 'true',
        TENANT_MEMBERS_LINK_USERS: 'true',
      }),
    );
    owner = await developerWithReadyDatabase(p);
    const credential = await httpClient(api.url)('POST', `${owner.D}/credentials`, { token: owner.token });
    expect(credential.status, credential.text).to.equal(201);
    connection = new URL(credential.body.connectionUrl);
  });

  after(async function () {
    await api?.close();
  });

  /** A new SDK instance, configured as an app would configure it (NILEDB_API_URL is the apiUrl, used verbatim). */
  function sdk(): Server {
    return new Server({
      apiUrl: `${api.url}/v2/databases/${owner.database.id}`,
      origin: APP_ORIGIN,
      user: decodeURIComponent(connection.username),
      password: decodeURIComponent(connection.password),
      databaseName: connection.pathname.slice(1),
      db: { host: connection.hostname, port: Number(connection.port), max: 2 },
    });
  }

  it('signs up, reads the session and the profile, manages tenants and members, signs out and in, leaves, and deletes the account', async function () {
    const nile = sdk();
    const providers = await nile.auth.listProviders();
    expect(providers).to.have.nested.property('credentials.type', 'credentials');

    // Bob first: a user Alice will add to her tenant.
    const bob = { email: uniqueEmail('bob'), password: TEST_PASSWORD };
    const bobSignedUp = (await nile.auth.signUp(bob)) as { id: string; email: string; tenants: string[] };
    expect(bobSignedUp).to.include({ email: bob.email });
    expect(bobSignedUp.tenants).to.deep.equal([]);
    await nile.auth.signOut();
    expect(await nile.auth.getSession()).to.equal(undefined);

    // Alice signs up with a tenant of her own.
    const alice = { email: uniqueEmail('alice'), password: TEST_PASSWORD };
    const aliceSignedUp = (await nile.auth.signUp({ ...alice, newTenantName: 'Acme' })) as { id: string; tenants: string[] };
    expect(aliceSignedUp.tenants).to.have.length(1);
    const acme = aliceSignedUp.tenants[0];

    const session = (await nile.auth.getSession()) as { user: { id: string; email: string } };
    expect(session.user).to.include({ id: aliceSignedUp.id, email: alice.email });
    // The CSRF token is stable while its cookie is held: the SDK keeps its session beside it.
    const csrf = (await nile.auth.getCsrf()) as { csrfToken: string };
    expect(csrf.csrfToken).to.match(/^[0-9a-f]{64}$/);
    expect((await nile.auth.getSession()) as object).to.have.nested.property('user.id', aliceSignedUp.id);

    const me = (await nile.users.getSelf()) as { id: string; email: string; tenants: string[] };
    expect(me).to.include({ id: aliceSignedUp.id, email: alice.email });
    expect(me.tenants).to.deep.equal([acme]);
    const updated = (await nile.users.updateSelf({ name: 'Alice A' })) as { name: string };
    expect(updated.name).to.equal('Alice A');

    const second = (await nile.tenants.create('Second')) as { id: string; name: string };
    expect(second.name).to.equal('Second');
    const listed = (await nile.tenants.list()) as { id: string }[];
    expect(listed.map((tenant) => tenant.id).sort()).to.deep.equal([acme, second.id].sort());
    expect(await nile.tenants.get(second.id)).to.include({ id: second.id, name: 'Second' });
    expect(await nile.tenants.update({ id: second.id, name: 'Renamed' })).to.include({ id: second.id, name: 'Renamed' });

    // One model: the tenant the SDK's auth API made is a row its SQL sees, through the gateway.
    const { rows } = await nile.query('select name from tenants where id = $1', [second.id]);
    expect(rows).to.deep.equal([{ name: 'Renamed' }]);

    expect(((await nile.tenants.users({ tenantId: acme })) as { id: string }[]).map((user) => user.id)).to.deep.equal([aliceSignedUp.id]);
    expect(await nile.tenants.addMember({ tenantId: acme, userId: bobSignedUp.id })).to.include({ id: bobSignedUp.id });
    // Oldest account first: Bob signed up before Alice.
    expect(((await nile.tenants.users({ tenantId: acme })) as { id: string }[]).map((user) => user.id)).to.deep.equal([bobSignedUp.id, aliceSignedUp.id]);
    const removed = (await nile.tenants.removeMember({ tenantId: acme, userId: bobSignedUp.id }, true)) as Response;
    expect(removed.status).to.equal(204);
    expect(((await nile.tenants.users({ tenantId: acme })) as { id: string }[]).map((user) => user.id)).to.deep.equal([aliceSignedUp.id]);

    const deleted = (await nile.tenants.delete(second.id)) as Response;
    expect(deleted.status).to.equal(204);
    expect(((await nile.tenants.list()) as { id: string }[]).map((tenant) => tenant.id)).to.deep.equal([acme]);

    // Bob joins Acme again; signed in as Bob, he leaves it.
    await nile.tenants.addMember({ tenantId: acme, userId: bobSignedUp.id });
    await nile.auth.signOut();
    expect(await nile.auth.getSession()).to.equal(undefined);
    await nile.auth.signIn('credentials', bob);
    expect((await nile.auth.getSession()) as object).to.have.nested.property('user.id', bobSignedUp.id);
    expect(((await nile.tenants.list()) as { id: string }[]).map((tenant) => tenant.id)).to.deep.equal([acme]);
    const left = (await nile.tenants.leaveTenant(acme)) as Response;
    expect(left.status).to.equal(204);
    expect(await nile.tenants.list()).to.deep.equal([]);

    // Bob deletes his account: his session ends, and he cannot sign in again.
    const gone = (await nile.users.removeSelf()) as Response;
    expect(gone.status).to.equal(204);
    expect(await nile.auth.getSession()).to.equal(undefined);
    // The API answers 401 with `?error=CredentialsSignin` in its Location; the SDK's callback proxy
    // makes any answer with a Location a 302, and signIn hands back the error with that status.
    const refused = (await nile.auth.signIn('credentials', bob)) as Response;
    expect(refused.status).to.equal(302);
    expect(await refused.text()).to.equal('CredentialsSignin');
    expect(await nile.auth.getSession()).to.equal(undefined);

    // A wrong password is the same 401; Alice still signs in with hers.
    expect(await ((await nile.auth.signIn('credentials', { ...alice, password: 'wrong password!' })) as Response).text()).to.equal('CredentialsSignin');
    await nile.auth.signIn('credentials', alice);
    expect((await nile.auth.getSession()) as object).to.have.nested.property('user.id', aliceSignedUp.id);
    await nile.auth.signOut();
  });

  it('runs withContext SQL in a tenant the SDK’s auth API made', async function () {
    const nile = sdk();
    const signedUp = (await nile.auth.signUp({ email: uniqueEmail('sql'), password: TEST_PASSWORD, newTenantName: 'SQL tenant' })) as { tenants: string[] };
    const [tenantId] = signedUp.tenants;
    const names = await nile.withContext({ tenantId }, async (scoped) => (await scoped.query('select name from tenants')).rows);
    expect(names).to.deep.equal([{ name: 'SQL tenant' }]);
    await nile.auth.signOut();
  });
});

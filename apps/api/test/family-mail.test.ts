import { expect } from 'chai';
import { Server } from '@niledatabase/server';
import { httpClient, linkIn, startTestMailServer } from '@platform/testing';
import { startApi, type RunningApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { platform, type TestPlatform } from './support/platform.js';
import { TEST_PASSWORD, developerWithReadyDatabase, uniqueEmail } from './support/fixtures.js';

/** The app built on the SDK, on a laptop: where its pages and its SDK routes (`/api/...`) live. */
const APP_ORIGIN = 'http://localhost:3000';
const NEW_PASSWORD = 'a brand new passphrase';

type MailServer = Awaited<ReturnType<typeof startTestMailServer>>;
type SignedUp = { id: string; email: string; tenants: string[] };

/**
 * The SDK's mail flows (@niledatabase/server 5.3.1, unmodified) against a real API and gateway,
 * with a real SMTP server in this process: links are followed from the mails it receives. Where
 * the app's browser would open a link on the app's own SDK routes, the test hands that request to
 * the SDK's `handlers`, as the app's route file does.
 */
describe('the API family’s SDK: invites, password reset and email verification by mail', function () {
  this.timeout(120_000);
  let p: TestPlatform;
  let api: RunningApi;
  let mail: MailServer;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let connection: URL;

  before(async function () {
    p = await platform();
    mail = await startTestMailServer();
    api = await startApi(loadApiConfig({ ...p.env, ALLOWED_ORIGINS: APP_ORIGIN, SMTP_URL: mail.url, MAIL_FROM: 'platform@example.test' }));
    owner = await developerWithReadyDatabase(p);
    // The developer opens sign-up and names the app's origin, where mailed links may point.
    const settings = await httpClient(api.url)('PUT', `${owner.D}/auth-settings`, { token: owner.token, json: { selfSignUp: true, appOrigins: [APP_ORIGIN] } });
    expect(settings.status, settings.text).to.equal(200);
    expect(settings.body).to.deep.equal({ selfSignUp: true, appOrigins: [APP_ORIGIN] });
    const credential = await httpClient(api.url)('POST', `${owner.D}/credentials`, { token: owner.token });
    expect(credential.status, credential.text).to.equal(201);
    connection = new URL(credential.body.connectionUrl);
  });

  after(async function () {
    await api?.close();
    await mail?.close();
  });

  function sdk(debug = false): Server {
    return new Server({
      debug,
      apiUrl: `${api.url}/v2/databases/${owner.database.id}`,
      origin: APP_ORIGIN,
      user: decodeURIComponent(connection.username),
      password: decodeURIComponent(connection.password),
      databaseName: connection.pathname.slice(1),
      db: { host: connection.hostname, port: Number(connection.port), max: 2 },
    });
  }

  /** The `name=value` of a Set-Cookie the answer carries. */
  function cookieOf(response: Response, name: string): string {
    const found = response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`));
    expect(found, `${name} in ${response.headers.getSetCookie().join(' | ')}`).to.be.a('string');
    return found!.split(';')[0]!;
  }

  it('invites by email: the invitee accepts from the received link, through the app’s SDK route or acceptInvite; invites list and revoke', async function () {
    const nile = sdk();
    const alice = (await nile.auth.signUp({ email: uniqueEmail('alice'), password: TEST_PASSWORD, newTenantName: 'Acme' })) as SignedUp;
    const [acme] = alice.tenants;
    const inAcme = <T>(fn: (scoped: Server) => Promise<T>) => nile.withContext({ tenantId: acme }, fn);

    // Carol clicks the link: it is the app's SDK route, which accepts and signs her in.
    const carol = uniqueEmail('carol');
    const invite = (await inAcme((scoped) => scoped.tenants.invite({ email: carol, callbackUrl: `${APP_ORIGIN}/welcome`, redirectUrl: `${APP_ORIGIN}/api/tenants/${acme}/invite` }))) as Record<string, unknown>;
    expect(invite).to.include({ tenant_id: acme, identifier: carol, created_by: alice.id, roles: null });
    expect(invite).not.to.have.property('token');
    expect(((await inAcme((scoped) => scoped.tenants.invites())) as { id: string }[]).map((pending) => pending.id)).to.deep.equal([invite.id]);
    const carolLink = linkIn(await mail.waitForMailTo(carol), `${APP_ORIGIN}/api/tenants/${acme}/invite`);
    expect(carolLink.searchParams.get('callbackUrl')).to.equal(`${APP_ORIGIN}/welcome`);
    const clicked = (await sdk().handlers.GET(new Request(carolLink))) as Response;
    expect(clicked.status, await clicked.clone().text()).to.equal(302);
    expect(clicked.headers.get('location')).to.equal(`${APP_ORIGIN}/welcome`);
    const carolSession = cookieOf(clicked, 'nile.session-token');
    const carolMe = await fetch(`${api.url}/v2/databases/${owner.database.id}/me`, { headers: { cookie: carolSession } });
    expect(await carolMe.json()).to.include({ email: carol }).and.to.have.property('tenants').deep.equal([acme]);
    expect(await inAcme((scoped) => scoped.tenants.invites())).to.deep.equal([]);

    // Dave's link is opened by the app's page, which calls acceptInvite with its token.
    const dave = uniqueEmail('dave');
    await inAcme((scoped) => scoped.tenants.invite({ email: dave, callbackUrl: `${APP_ORIGIN}/welcome` }));
    const daveLink = linkIn(await mail.waitForMailTo(dave), APP_ORIGIN);
    const guest = sdk();
    const accepted = (await guest.withContext({ tenantId: acme }, (scoped) =>
      scoped.tenants.acceptInvite({ identifier: daveLink.searchParams.get('identifier')!, token: daveLink.searchParams.get('token')!, callbackUrl: `${APP_ORIGIN}/welcome` }, true),
    )) as Response;
    expect(accepted.status, await accepted.clone().text()).to.equal(302);
    const daveMe = await fetch(`${api.url}/v2/databases/${owner.database.id}/me`, { headers: { cookie: cookieOf(accepted, 'nile.session-token') } });
    expect(await daveMe.json()).to.include({ email: dave }).and.to.have.property('tenants').deep.equal([acme]);
    const members = (await inAcme((scoped) => scoped.tenants.users())) as { email: string }[];
    expect(members.map((member) => member.email).sort()).to.deep.equal([alice.email, carol, dave].sort());

    // Erin's invite is revoked: it leaves the list and its link stops working.
    const erin = uniqueEmail('erin');
    const erinInvite = (await inAcme((scoped) => scoped.tenants.invite({ email: erin }))) as { id: string };
    // Without a callback, the link is this API's own invite page (http://api.test here), GET /tenants/{t}/invite.
    const erinLink = linkIn(await mail.waitForMailTo(erin), `http://api.test/v2/databases/${owner.database.id}/tenants/${acme}/invite`);
    const revoked = (await inAcme((scoped) => scoped.tenants.deleteInvite(erinInvite.id))) as Response;
    expect(revoked.status).to.equal(204);
    expect(await inAcme((scoped) => scoped.tenants.invites())).to.deep.equal([]);
    const refused = (await sdk().withContext({ tenantId: acme }, (scoped) =>
      scoped.tenants.acceptInvite({ identifier: erin, token: erinLink.searchParams.get('token')!, callbackUrl: `${APP_ORIGIN}/welcome` }, true),
    )) as Response;
    expect(refused.status).to.equal(400);
    expect(await refused.json()).to.include({ errorCode: 'invalid_one_time_token' });
  });

  it('resets a forgotten password from the received link and signs in with the new one; a session alone gets no reset token', async function () {
    const app = sdk();
    const bob = { email: uniqueEmail('bob'), password: TEST_PASSWORD };
    await app.auth.signUp(bob);
    await app.auth.signOut();

    const asked = (await app.auth.forgotPassword({ email: bob.email, callbackUrl: `${APP_ORIGIN}/reset`, redirectUrl: `${APP_ORIGIN}/api/auth/reset-password` })) as Response;
    expect(asked.status, await asked.clone().text()).to.equal(200);
    expect(await asked.json()).to.deep.equal({ url: `${APP_ORIGIN}/reset` });
    const link = linkIn(await mail.waitForMailTo(bob.email), `${APP_ORIGIN}/api/auth/reset-password`);

    // The browser opens the link on the app's SDK route: the token becomes the nile.reset cookie.
    const opened = (await app.handlers.GET(new Request(link))) as Response;
    expect(opened.status, await opened.clone().text()).to.equal(302);
    expect(opened.headers.get('location')).to.equal(`${APP_ORIGIN}/reset`);
    const resetCookie = cookieOf(opened, 'nile.reset');
    // The reset page's form, with the browser's cookie, through the same SDK route.
    const reset = (await app.handlers.PUT(
      new Request(`${APP_ORIGIN}/api/auth/reset-password`, { method: 'PUT', headers: { cookie: resetCookie, 'content-type': 'application/json' }, body: JSON.stringify({ email: bob.email, password: NEW_PASSWORD }) }),
    )) as Response;
    expect(reset.status, await reset.clone().text()).to.equal(302);
    expect(cookieOf(reset, 'nile.session-token')).to.match(/^nile\.session-token=.+/);

    const again = sdk();
    expect(await ((await again.auth.signIn('credentials', bob)) as Response).text()).to.equal('CredentialsSignin');
    await again.auth.signIn('credentials', { ...bob, password: NEW_PASSWORD });
    expect((await again.auth.getSession()) as object).to.have.nested.property('user.email', bob.email);

    // Signed in, the SDK's resetPassword gets no token for the session alone (a stolen cookie must not
    // change the password): the link goes to the inbox, and the SDK, finding no token, throws.
    const signedIn = async (password: string) => {
      try {
        await again.auth.resetPassword({ email: bob.email, password });
      } catch (error) {
        return String(error);
      }
      return 'no error';
    };
    expect(await signedIn('hijacked passphrase')).to.include('reset token is missing');
    // Its redirectUrl comes from the SDK's callback cookie (this API's sign-in): the link is this API's own route.
    const resetRoute = `/v2/databases/${owner.database.id}/auth/reset-password`;
    const relink = linkIn(await mail.waitForMailTo(bob.email, { count: 2 }), `http://api.test${resetRoute}`);
    expect((await again.auth.getSession()) as object).to.have.nested.property('user.email', bob.email);
    // From the mailed link, the reset page (holding the link's nile.reset cookie) calls resetPassword: it works.
    const followed = await fetch(new URL(`${relink.pathname}${relink.search}`, api.url));
    expect(followed.status, await followed.clone().text()).to.equal(200);
    // Opened on this API, the cookie goes back to the reset route only.
    const set = followed.headers.getSetCookie().find((cookie) => cookie.startsWith('nile.reset='))!;
    expect(set).to.include(`; Path=${resetRoute};`);
    const page = sdk();
    const changed = (await page.withContext({ headers: new Headers({ cookie: cookieOf(followed, 'nile.reset') }) }, (scoped) =>
      scoped.auth.resetPassword({ email: bob.email, password: 'yet another passphrase' }),
    )) as Response;
    expect(changed.status, await changed.clone().text()).to.equal(302);
    const third = sdk();
    expect(await ((await third.auth.signIn('credentials', { ...bob, password: NEW_PASSWORD })) as Response).text()).to.equal('CredentialsSignin');
    await third.auth.signIn('credentials', { ...bob, password: 'yet another passphrase' });
    expect((await third.auth.getSession()) as object).to.have.nested.property('user.email', bob.email);

    // Signed out, it cannot either: the token goes only to the inbox.
    const stranger = sdk();
    let thrown: unknown;
    try {
      await stranger.auth.resetPassword({ email: bob.email, password: 'hijacked passphrase' });
    } catch (error) {
      thrown = error;
    }
    expect(String(thrown)).to.include('reset token is missing');
    // Bob got three mails: his forgot-password, the signed-in ask and the stranger's; the reset page's
    // resetPassword, holding the link's cookie, was handed that token back and mailed nothing.
    await mail.waitForMailTo(bob.email, { count: 3 });
    expect(String(await mail.waitForMailTo(bob.email, { count: 4, timeoutMs: 500 }).catch((error: unknown) => error))).to.include('no mail number 4');
  });

  it('verifies the signed-in user’s email from the received link; MFA answers not enabled', async function () {
    const nile = sdk();
    const eve = (await nile.auth.signUp({ email: uniqueEmail('eve'), password: TEST_PASSWORD })) as SignedUp;
    expect((await nile.auth.getSession()) as object).to.have.nested.property('user.emailVerified', null);
    const sent = (await nile.users.verifySelf({ callbackUrl: `${APP_ORIGIN}/verified` }, true)) as Response;
    expect(sent.status, await sent.clone().text()).to.equal(200);
    // The link is this API's own route, at its public URL (http://api.test here): the test reaches it at api.url.
    const mailed = linkIn(await mail.waitForMailTo(eve.email), `http://api.test/v2/databases/${owner.database.id}/auth/verify-email`);
    const link = new URL(`${mailed.pathname}${mailed.search}`, api.url);
    const followed = await fetch(link);
    expect(followed.status).to.equal(200);
    expect(followed.headers.get('location')).to.equal(`${APP_ORIGIN}/verified`);
    const session = (await nile.auth.getSession()) as { user: { emailVerified: string | null } };
    expect(session.user.emailVerified).to.be.a('string');
    expect(((await fetch(link)) as Response).status).to.equal(400);

    expect(await nile.auth.mfa({ scope: 'setup' })).to.deep.equal({
      errorCode: 'mfa_not_enabled',
      message: 'Multi-factor authentication is not enabled on this platform',
      statusCode: 400,
    });
  });
});

/**
 * Issue 46, first point: a password hash never holds a database connection, a place in the
 * connection budget, or a transaction. Each way a platform database's user gets a password hashed
 * or checked runs here over real PostgreSQL as the API runs it (the budget, the repositories, the
 * hashing queue), with a hash function that looks, while it hashes, at what the budget has lent
 * and at the database's sessions inside a transaction.
 */
import { expect } from 'chai';
import {
  acceptInvite, resetPassword, signIn, signUp, type AccountTokenDeps, type Database, type PasswordHasher, type SignInDeps,
} from '@platform/domain';
import { FairHashingQueue, ScryptPasswordHasher } from '@platform/auth';
import { query } from '@platform/testing';
import { startScratchDataPlane, type ScratchDataPlane } from './scratch-data-plane.test.js';
import { serviceUrl } from './service-role.js';

interface Held {
  /** Connections of the budget lent out or opening, the cluster's. */
  lent: number;
  /** Sessions of the database inside a transaction. */
  inTransaction: number;
}

/** scrypt, looking first at what is held. */
class LookingHasher implements PasswordHasher {
  readonly seen: Held[] = [];
  private readonly scrypt = new ScryptPasswordHasher(10);

  constructor(private readonly look: () => Promise<Held>) {}

  async hash(password: string): Promise<string> {
    this.seen.push(await this.look());
    return this.scrypt.hash(password);
  }

  async verify(password: string, hash: string): Promise<boolean> {
    this.seen.push(await this.look());
    return this.scrypt.verify(password, hash);
  }

  async verifyNothing(password: string): Promise<false> {
    this.seen.push(await this.look());
    return this.scrypt.verifyNothing(password);
  }
}

describe('a password hash holds nothing of the database (issue 46)', function () {
  let plane: ScratchDataPlane;

  before(async function () {
    plane = await startScratchDataPlane();
  });

  after(async function () {
    await plane?.close();
  });

  async function world() {
    const database = await plane.newDatabase('hashing');
    const url = serviceUrl(plane.server.adminUrl, database.name);
    const look = async (): Promise<Held> => {
      const { open, idle } = plane.connections.usage(url);
      const [{ n }] = await query<{ n: number }>(plane.server.adminUrl, 'select count(*)::int as n from pg_stat_activity where datname = $1 and xact_start is not null', [database.name]);
      return { lent: open - idle, inTransaction: n };
    };
    const hasher = new LookingHasher(look);
    const hashing = new FairHashingQueue(hasher, { slots: 2, perAccount: 4, maxWaitMs: 60_000 }, 5, 0);
    const record: Database = database.record;
    const locator = { findById: async (id: string) => (id === record.id ? record : null), findBySlugAndName: async (slug: string, name: string) => (slug === record.workspace.slug && name === record.name ? record : null) };
    const signInDeps: SignInDeps = {
      // signUp by a member of the tenant (where members create users): it needs no control plane.
      workspaces: undefined as never,
      databases: undefined as never,
      membersCreateUsers: true,
      locator,
      dataPlane: plane.dataPlane,
      hasher: hashing,
      throttle: { attempt: async (_subject, verify) => ({ ok: await verify() }), spend: async () => null },
      tokens: { issue: async () => ({ jwt: 'jwt', maxAge: 3600 }) },
      sessionTtlSeconds: 600,
    };
    const tokenDeps: AccountTokenDeps = {
      locator,
      dataPlane: plane.dataPlane,
      accountTokens: plane.dataPlane,
      mailer: { send: async () => {} },
      mailThrottle: { spend: async () => null },
      detach: () => {},
      hasher: hashing,
    };
    return { ...database, look, hasher, signInDeps, tokenDeps, path: { workspaceSlug: record.workspace.slug, databaseName: record.name } };
  }

  it('the look sees a connection lent and a transaction open (it can fail)', async function () {
    const { look, record, repos } = await world();
    // The first use enables the database's service login (the repair path), as the API's would.
    await repos.users.findByEmail('nobody@example.test');
    expect(await look()).to.deep.equal({ lent: 0, inTransaction: 0 });
    const client = await plane.connections.queryable(serviceUrl(plane.server.adminUrl, record.physicalName)).connect();
    try {
      await client.query('begin');
      await client.query('select 1');
      expect(await look()).to.deep.equal({ lent: 1, inTransaction: 1 });
    } finally {
      await client.query('rollback');
      client.release();
    }
  });

  it('signing up, signing in (right, wrong, unknown email, to a tenant), resetting a password and accepting an invite with one', async function () {
    const { repos, record, hasher, signInDeps, tokenDeps, path } = await world();
    const tenant = await repos.tenants.create({ name: 'Acme' });
    const owner = await repos.users.create({ email: 'owner@example.test', passwordHash: 'x' }, tenant.id);
    const session = await repos.sessions.create(owner.id, 600);
    const member = { kind: 'user' as const, userId: owner.id, databaseId: record.id, sessionId: session.id };
    const ada = await signUp(signInDeps, member, { ...path, tenantId: tenant.id }, { email: 'ada@example.test', password: 'ada password' }, '192.0.2.1');
    await signIn(signInDeps, path, { email: 'ada@example.test', password: 'ada password' }, '192.0.2.1');
    await signIn(signInDeps, { ...path, tenantId: tenant.id }, { email: 'ada@example.test', password: 'ada password' }, '192.0.2.1');
    await signIn(signInDeps, path, { email: 'ada@example.test', password: 'wrong' }, '192.0.2.1').catch(() => {});
    await signIn(signInDeps, path, { email: 'nobody@example.test', password: 'any' }, '192.0.2.1').catch(() => {});
    const tokens = plane.dataPlane.openAccountTokens(record).tokens;
    const reset = await tokens.issue({ purpose: 'password_reset', userId: ada.user.id, email: 'ada@example.test' }, 600);
    await resetPassword(tokenDeps, { databaseId: record.id, token: reset.token, password: 'new password', clientAddress: '192.0.2.1' });
    const invite = await tokens.issue({ purpose: 'tenant_invite', email: 'grace@example.test', tenantId: tenant.id, createdBy: ada.user.id }, 600);
    await acceptInvite(tokenDeps, { databaseId: record.id, tenantId: tenant.id, token: invite.token, password: 'grace password', clientAddress: '192.0.2.1' });
    expect(hasher.seen).to.have.length(7);
    expect(hasher.seen).to.deep.equal(Array.from({ length: 7 }, () => ({ lent: 0, inTransaction: 0 })));
  });
});

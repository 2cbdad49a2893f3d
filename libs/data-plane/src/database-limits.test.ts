import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
// Integration test: the limits are PostgreSQL's own (role settings, a database's CONNECTION LIMIT), so it runs against a real server.
import { createScratchDatabase, dropScratchDatabase, rejection, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createCredentialRole, credentialRoleName, dropDatabaseRoles } from './credential-roles.js';
import { applyDatabaseLimits, DATABASE_LIMIT_DEFAULTS, setDatabaseConnectionLimit, type CredentialSessionLimits, type DatabaseLimits } from './database-limits.js';
import { databaseRoleNames } from './database-roles.js';
import { installBuiltInSchema } from './schema-installer.js';
import { connect, credentialUrl, firstColumn, dropCredentialDatabase } from './scratch-data-plane.test.js';

describe('database and credential limits', function () {
  let postgres: TestPostgres;
  /** Superuser connections: to the maintenance database, and to the database under test. */
  let admin: pg.Client;
  let database: pg.Client;
  let name: string;
  let tenants: { a: string; b: string };
  const credentials: string[] = [];
  const sessions: pg.Client[] = [];


  before(async function () {
    postgres = await startTestPostgres();
    const scratch = await createScratchDatabase(postgres, 'limits');
    name = scratch.name;
    [admin, database] = [await connect(postgres.adminUrl), await connect(scratch.url)];
    await installBuiltInSchema(database);
    const [a, b] = await firstColumn(database, `insert into tenants (name) values ('A'), ('B') returning id`);
    tenants = { a, b };
    // A tenant-aware table of the developer's, made as the owner role (as an unscoped credential would).
    await database.query(`set role ${databaseRoleNames(name).owner}; create table public.orders (id int, tenant_id uuid); reset role`);
    await database.query('insert into public.orders values (1, $1), (2, $2)', [a, b]);
  });

  afterEach(async function () {
    await Promise.all(sessions.splice(0).map((session) => session.end().catch(() => {})));
  });

  after(async function () {
    await dropCredentialDatabase({ postgres, admin, database, name, credentials });
  });

  async function newCredential(tenantId: string | null, limits?: CredentialSessionLimits): Promise<{ role: string; url: string }> {
    const role = credentialRoleName();
    const password = randomBytes(18).toString('base64url');
    await createCredentialRole(admin, database, { physicalName: name, roleName: role, password, tenantId, limits });
    credentials.push(role);
    return { role, url: credentialUrl(postgres.adminUrl, name, { role, password }) };
  }

  async function login(url: string): Promise<pg.Client> {
    const session = await connect(url);
    sessions.push(session);
    return session;
  }

  /** Ended sessions' backends leave a moment after their sockets close; the limit counts them until then. */
  async function sessionsGone(): Promise<void> {
    for (let tries = 0; tries < 100; tries += 1) {
      const { rows } = await admin.query<{ n: number }>(
        'select count(*)::int as n from pg_stat_activity a join pg_roles r on r.oid = a.usesysid where a.datname = $1 and not r.rolsuper',
        [name],
      );
      if (rows[0].n === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('sessions of earlier tests did not end');
  }

  async function settingsOf(session: pg.Client): Promise<Record<string, string>> {
    const { rows } = await session.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings where name in ('temp_file_limit', 'lock_timeout', 'idle_in_transaction_session_timeout')`,
    );
    return Object.fromEntries(rows.map((row) => [row.name, row.setting]));
  }

  it('gives a credential’s sessions the defaults, which it cannot raise past the temporary-file limit', async function () {
    const session = await login((await newCredential(tenants.a)).url);
    expect(await settingsOf(session)).to.deep.equal({
      temp_file_limit: String(5 * 1024 * 1024),
      lock_timeout: '30000',
      idle_in_transaction_session_timeout: '300000',
    });
    const error = await rejection(session.query(`set temp_file_limit = '100GB'`));
    expect({ code: error.code, message: error.message }).to.deep.equal({ code: '42501', message: 'permission denied to set parameter "temp_file_limit"' });
  });

  it('ends a sort that spills past the temporary-file limit with 53400', async function () {
    const session = await login((await newCredential(null, { ...DATABASE_LIMIT_DEFAULTS.session, tempFileLimitKiB: 1024 })).url);
    await session.query(`set work_mem = '64kB'`);
    // Fits: a small sort stays in memory.
    expect((await session.query('select count(*)::int as n from (select g from generate_series(1, 1000) g order by g desc) s')).rows).to.deep.equal([{ n: 1000 }]);
    const error = await rejection(session.query(`select count(*) from (select md5(g::text) as m from generate_series(1, 500000) g order by 1) s`));
    expect({ code: error.code, message: error.message }).to.deep.equal({ code: '53400', message: 'temporary file size exceeds "temp_file_limit" (1024kB)' });
  });

  it('bounds how long one tenant’s lock holds another’s reads: the waiting statement gives up (lock_timeout)', async function () {
    const limits = { ...DATABASE_LIMIT_DEFAULTS.session, lockTimeoutMs: 300 };
    const [holder, reader] = [await login((await newCredential(tenants.a, limits)).url), await login((await newCredential(tenants.b, limits)).url)];
    await holder.query('begin');
    await holder.query('lock table public.orders in access exclusive mode');
    const started = Date.now();
    const error = await rejection(reader.query('select count(*) from public.orders'));
    expect({ code: error.code, message: error.message }).to.deep.equal({ code: '55P03', message: 'canceling statement due to lock timeout' });
    expect(Date.now() - started).to.be.below(5_000);
    // The holder's transaction goes on: only the waiter paid.
    await holder.query('rollback');
    expect((await reader.query('select tenant_id from public.orders')).rows).to.deep.equal([{ tenant_id: tenants.b }]);
  });

  it('bounds how long one tenant’s lock holds another’s reads: an idle holder is ended (idle_in_transaction_session_timeout)', async function () {
    const limits = { ...DATABASE_LIMIT_DEFAULTS.session, lockTimeoutMs: 0, idleInTransactionTimeoutMs: 500 };
    const [holder, reader] = [await login((await newCredential(tenants.a, limits)).url), await login((await newCredential(tenants.b, limits)).url)];
    const ended = new Promise<Error & { code?: string }>((resolve) => holder.once('error', resolve));
    await holder.query('begin');
    await holder.query('lock table public.orders in access exclusive mode');
    const started = Date.now();
    expect((await reader.query('select tenant_id from public.orders')).rows).to.deep.equal([{ tenant_id: tenants.b }]);
    expect(Date.now() - started).to.be.within(300, 5_000);
    const error = await ended;
    expect({ code: error.code, message: error.message }).to.deep.equal({ code: '25P03', message: 'terminating connection due to idle-in-transaction timeout' });
  });

  it('brings existing credentials and databases to new limits, leaving a paused database paused, and changes nothing twice', async function () {
    const before = await newCredential(tenants.a);
    const limits: DatabaseLimits = { session: { tempFileLimitKiB: 2048, lockTimeoutMs: 1234, idleInTransactionTimeoutMs: 5678 }, maxConnections: 7 };
    const paused = await createScratchDatabase(postgres, 'paused');
    try {
      const pausedClient = await connect(paused.url);
      await installBuiltInSchema(pausedClient).finally(() => pausedClient.end());
      await setDatabaseConnectionLimit(admin, paused.name, 0);

      // One database at a time: a pass over the whole cluster would reach other test files' databases too.
      const changed = await applyDatabaseLimits(admin, limits, { only: name });
      expect(changed.roles).to.be.at.least(1);
      expect(await applyDatabaseLimits(admin, limits, { only: paused.name })).to.deep.equal({ roles: 0, databases: 0 });
      expect(await settingsOf(await login(before.url))).to.deep.equal({ temp_file_limit: '2048', lock_timeout: '1234', idle_in_transaction_session_timeout: '5678' });
      const limitsNow = await admin.query<{ datname: string; datconnlimit: number }>(
        'select datname, datconnlimit from pg_database where datname = any($1) order by datname',
        [[name, paused.name].sort()],
      );
      expect(Object.fromEntries(limitsNow.rows.map((row) => [row.datname, row.datconnlimit]))).to.deep.equal({ [name]: 7, [paused.name]: 0 });
      expect(await applyDatabaseLimits(admin, limits, { only: name })).to.deep.equal({ roles: 0, databases: 0 });
    } finally {
      await dropScratchDatabase(postgres, paused.name);
      await dropDatabaseRoles(admin, paused.name);
      await applyDatabaseLimits(admin, DATABASE_LIMIT_DEFAULTS, { only: name });
    }
  });

  it('refuses a session past the database’s connection limit with 53300, whoever the credential', async function () {
    const [first, second] = [await newCredential(null), await newCredential(tenants.a)];
    await sessionsGone();
    // The limit counts every session, superusers' too (this test's own), though it refuses none of theirs.
    await setDatabaseConnectionLimit(admin, name, 3);
    try {
      await login(first.url);
      await login(second.url);
      const error = await rejection(connect(first.url));
      expect({ code: error.code, message: error.message }).to.deep.equal({ code: '53300', message: `too many connections for database "${name}"` });
    } finally {
      await setDatabaseConnectionLimit(admin, name, DATABASE_LIMIT_DEFAULTS.maxConnections);
    }
  });

  it('lets many sessions change one database’s and its credentials’ limits at once (no "tuple concurrently updated")', async function () {
    await newCredential(null);
    const admins = await Promise.all(Array.from({ length: 6 }, () => connect(postgres.adminUrl)));
    sessions.push(...admins);
    try {
      for (const round of [11, 12, 13]) {
        const limits: DatabaseLimits = { ...DATABASE_LIMIT_DEFAULTS, maxConnections: round, session: { ...DATABASE_LIMIT_DEFAULTS.session, lockTimeoutMs: round * 100 } };
        // Each pass reads the catalog, then alters the role and the database it found behind: all
        // six find the same rows to change, and each changes them.
        const passes = admins.map((session, index) => (index % 2 === 0 ? applyDatabaseLimits(session, limits, { only: name }) : setDatabaseConnectionLimit(session, name, round)));
        const outcomes = await Promise.allSettled(passes);
        expect(outcomes.filter((outcome) => outcome.status === 'rejected').map((outcome) => String((outcome as PromiseRejectedResult).reason))).to.deep.equal([]);
        const [found] = await firstColumn(admin, 'select datconnlimit::text from pg_database where datname = $1', [name]);
        expect(found).to.equal(String(round));
      }
    } finally {
      await applyDatabaseLimits(admin, DATABASE_LIMIT_DEFAULTS, { only: name });
    }
  });
});

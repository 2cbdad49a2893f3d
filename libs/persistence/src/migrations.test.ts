import { expect } from 'chai';
import { migrationsList } from './migrations/index.js';
import { migrateControlPlane, openOrm, type MikroORM } from './orm.js';
import { createScratchDatabase, dropScratchDatabase, query, startTestPostgres, type ScratchDatabase, type TestPostgres } from '@platform/testing';

/** Every migration, in order: a run on a fresh database applies all of them. */
const MIGRATIONS = ['Migration20261122000000_control_plane', 'Migration20261122010000_oauth_clients', 'Migration20261122020000_grants', 'Migration20261122030000_client_notifications', 'Migration20261122040000_credentials', 'Migration20261122050000_private_control_plane', 'Migration20261122060000_sign_in_failures', 'Migration20261122070000_query_minutes', 'Migration20261122080000_observer_minutes', 'Migration20261122090000_insight_rollups', 'Migration20261122100000_sso', 'Migration20261122110000_nilecli_client', 'Migration20261122120000_sso_login_limits', 'Migration20261123000000_compute', 'Migration20261123010000_instance_routing', 'Migration20261123020000_list_order', 'Migration20261124000000_workspace_invitations', 'Migration20261124010000_sealed_signing_keys', 'Migration20261126010000_compute_health', 'Migration20261127020000_restorable_deletes', 'Migration20261127030000_database_sources', 'Migration20261128010000_served_since', 'Migration20261128020000_failed_copies', 'Migration20261128050000_database_auth_settings', 'Migration20261128060000_sso_spent_states'];
const TABLES = ['authorization_codes', 'compute_instances', 'credentials', 'database_auth_settings', 'databases', 'developers', 'oauth_clients', 'observer_minutes', 'observer_rollups', 'query_minutes', 'query_rollups', 'refresh_tokens', 'sign_in_failures', 'signing_keys', 'sso_login_states', 'sso_registrations', 'sso_spent_states', 'token_families', 'workspace_invitations', 'workspace_members', 'workspaces'];

describe('migrateControlPlane', function () {
  let server: TestPostgres;
  let database: ScratchDatabase;
  const orms: MikroORM[] = [];

  async function orm(url: string, poolSize = 4): Promise<MikroORM> {
    const opened = await openOrm({ databaseUrl: url, poolSize });
    orms.push(opened);
    return opened;
  }

  async function appliedMigrations(url: string): Promise<string[]> {
    const rows = await query<{ name: string }>(url, 'select name from control_plane_migrations order by id');
    return rows.map((row) => row.name);
  }

  async function publicTables(url: string): Promise<string[]> {
    const rows = await query<{ table_name: string }>(
      url,
      `select table_name from information_schema.tables where table_schema = 'public' and table_name <> 'control_plane_migrations' order by table_name`,
    );
    return rows.map((row) => row.table_name);
  }

  before(async function () {
    server = await startTestPostgres();
  });

  beforeEach(async function () {
    database = await createScratchDatabase(server, 'mig');
  });

  afterEach(async function () {
    await Promise.all(orms.splice(0).map((opened) => opened.close()));
    await dropScratchDatabase(server, database.name);
  });

  after(async function () {
    await server?.stop();
  });

  it('lists exactly the control-plane migration', function () {
    expect(migrationsList.map((migration) => migration.name)).to.deep.equal(MIGRATIONS);
  });

  it('migrates through a pool of one connection (the lock and the migration share it)', async function () {
    const control = await orm(database.url, 1);
    expect(await migrateControlPlane(control)).to.deep.equal(MIGRATIONS);
    expect(await migrateControlPlane(control)).to.deep.equal([]);
    expect(await publicTables(database.url)).to.deep.equal(TABLES);
  });

  it('applies the migration once; a second call applies nothing', async function () {
    const control = await orm(database.url);
    expect(await migrateControlPlane(control)).to.deep.equal(MIGRATIONS);
    expect(await publicTables(database.url)).to.deep.equal(TABLES);

    expect(await migrateControlPlane(control)).to.deep.equal([]);
    expect(await appliedMigrations(database.url)).to.deep.equal(MIGRATIONS);
  });

  it('finds the migration applied by another process and applies nothing', async function () {
    expect(await migrateControlPlane(await orm(database.url))).to.deep.equal(MIGRATIONS);
    expect(await migrateControlPlane(await orm(database.url))).to.deep.equal([]);
    expect(await appliedMigrations(database.url)).to.deep.equal(MIGRATIONS);
  });

  it('lets two processes migrate a fresh database at once: both succeed, the migration runs once', async function () {
    const [first, second] = await Promise.all([orm(database.url), orm(database.url)]);
    const results = await Promise.all([migrateControlPlane(first), migrateControlPlane(second)]);

    expect(results.flat()).to.deep.equal(MIGRATIONS);
    expect(await appliedMigrations(database.url)).to.deep.equal(MIGRATIONS);
    expect(await publicTables(database.url)).to.deep.equal(TABLES);
  });

  it('lets one ORM migrate twice at once: both calls succeed, the migration runs once', async function () {
    const control = await orm(database.url);
    const results = await Promise.all([migrateControlPlane(control), migrateControlPlane(control)]);

    expect(results.flat()).to.deep.equal(MIGRATIONS);
    expect(await appliedMigrations(database.url)).to.deep.equal(MIGRATIONS);
  });

  it('leaves PUBLIC no CONNECT or TEMPORARY on the control plane: credentials of the same cluster cannot connect', async function () {
    const probe = async () =>
      (await query<{ connect: boolean; temporary: boolean }>(
        database.url,
        `select has_database_privilege('public', current_database(), 'CONNECT') as connect,
                has_database_privilege('public', current_database(), 'TEMPORARY') as temporary`,
      ))[0];
    expect(await probe()).to.deep.equal({ connect: true, temporary: true });
    await migrateControlPlane(await orm(database.url));
    expect(await probe()).to.deep.equal({ connect: false, temporary: false });
  });

  it('creates the partial indexes the repositories and the provisioner rely on', async function () {
    await migrateControlPlane(await orm(database.url));
    const rows = await query<{ indexname: string; indexdef: string }>(
      database.url,
      `select indexname, indexdef from pg_indexes where tablename = 'databases' order by indexname`,
    );
    const byName = new Map(rows.map((row) => [row.indexname, row.indexdef]));
    expect(byName.get('databases_workspace_name_live')).to.match(/UNIQUE INDEX .*\(workspace_id, name\) WHERE \(deleted IS NULL\)/);
    expect(byName.get('databases_needing_work')).to.match(/WHERE/);
    expect(byName.has('databases_physical_name_unique')).to.equal(true);
  });

  it('makes the databases an earlier release deleted, and had yet to drop, due to be dropped at once', async function () {
    const control = await orm(database.url);
    await control.migrator.up({ to: 'Migration20261126010000_compute_health' });
    await query(database.url, `insert into workspaces (id, name, slug, created) values ('00000000-0000-4000-8000-000000000001', 'W', 'w', now())`);
    const insert = `insert into databases (id, workspace_id, name, region, status, physical_name, created, updated, deleted, dropped)
      values ($1, '00000000-0000-4000-8000-000000000001', $2, 'AWS_US_WEST_2', 'READY', $2, now(), now(), $3, $4)`;
    const deleted = new Date('2026-11-20T10:00:00Z');
    await query(database.url, insert, ['00000000-0000-4000-8000-00000000000a', 'live', null, null]);
    await query(database.url, insert, ['00000000-0000-4000-8000-00000000000b', 'undropped', deleted, null]);
    await query(database.url, insert, ['00000000-0000-4000-8000-00000000000c', 'dropped', deleted, deleted]);

    await migrateControlPlane(control);
    expect(await query(database.url, 'select name, purge_after, closed from databases order by name')).to.deep.equal([
      { name: 'dropped', purge_after: deleted, closed: null },
      { name: 'live', purge_after: null, closed: null },
      { name: 'undropped', purge_after: deleted, closed: null },
    ]);
    // A deleted database always says until when it can be restored.
    const refused = await query(database.url, `update databases set deleted = now() where name = 'live'`).catch((error: { code?: string }) => error.code);
    expect(refused).to.equal('23514');
  });

  it('upgrades signing keys in place: a plain private half stays until a replica seals it, and going back refuses once one is sealed', async function () {
    const control = await orm(database.url);
    await control.migrator.up({ to: 'Migration20261124000000_workspace_invitations' });
    const plain = { kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'd' };
    await query(database.url, `insert into signing_keys (kid, alg, public_jwk, private_jwk, created) values ('old', 'ES256', '{}', $1, now())`, [JSON.stringify(plain)]);

    expect(await migrateControlPlane(control)).to.deep.equal(MIGRATIONS.slice(MIGRATIONS.indexOf('Migration20261124010000_sealed_signing_keys')));
    expect(await query(database.url, `select private_jwk, sealed_private_jwk from signing_keys`)).to.deep.equal([{ private_jwk: plain, sealed_private_jwk: null }]);

    await query(database.url, `update signing_keys set sealed_private_jwk = 'v1.k.iv.body', private_jwk = null`);
    // The later migrations go back first; then the sealing one refuses.
    await control.migrator.down({ to: 'Migration20261124010000_sealed_signing_keys' });
    let refused: Error | undefined;
    await control.migrator.down().catch((error: Error) => (refused = error));
    expect(refused?.message).to.include('signing keys are sealed with SIGNING_KEY_SECRET_KEYS');
    await migrateControlPlane(control);
    expect(await appliedMigrations(database.url)).to.deep.equal(MIGRATIONS);
  });
});

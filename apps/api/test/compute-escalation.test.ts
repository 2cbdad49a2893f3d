import { expect } from 'chai';
import pg from 'pg';
import { eventually, query, withClient } from '@platform/testing';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { developerWithReadyDatabase } from './support/fixtures.js';

/**
 * A customer's code must gain nothing from the platform's moves. Moving a database restores it on
 * another server, and PostgreSQL evaluates customer code while it does: constraints and generated
 * columns as rows are copied in, index expressions and exclusion constraints as indexes are built.
 * Each way below calls a trap that, run with a superuser's rights, makes the credential a superuser
 * (and tries lesser escalations whoever runs it); it logs who ran it, where, and whether they were
 * powerful. Before this was fixed, the restore ran as the target's superuser and the trap worked.
 */
const VECTORS_EVALUATED_ON_RESTORE = ['check', 'domain', 'exclusion', 'generated', 'index', 'partial', 'tenant_check'];
const VECTORS = ['check', 'domain', 'generated', 'index', 'partial', 'exclusion', 'trigger', 'rule', 'default', 'policy', 'tenant_check'];
/** Who a trap finds itself running as. */
const WHO = ['powerful', 'mover_with_admin', 'mover', 'owner', 'credential', 'other'];

/** The credential's URL without sslmode (the test gateway allows plain connections). */
function plain(url: string): string {
  const parsed = new URL(url);
  parsed.searchParams.delete('sslmode');
  return parsed.href;
}

function trapSql(credential: string): string[] {
  const role = credential.replace(/[^a-z0-9_]/g, '');
  return [
    ...VECTORS.flatMap((vector) => WHO.map((who) => `create table public.trap_seen_${vector}_${who} ()`)),
    // Volatile: it may write. Immutable and boolean wrappers call it where PostgreSQL wants those.
    // Its evidence is a scan of a marker table named for the vector and for who ran it, which the
    // server counts (pg_stat_user_tables.seq_scan) in each copy of the database from its start:
    // rows would not do (a parallel restore empties each table it made before loading its rows),
    // and a table it made would be dropped with the mover, or fail the move.
    `create function public.trap_v(x int, vector text) returns int language plpgsql as $f$
     declare
       powerful boolean;
       who text;
     begin
       begin
         execute 'reset role';
       exception when others then null;
       end;
       powerful := (select rolsuper or rolcreaterole or rolbypassrls from pg_catalog.pg_roles where rolname = current_user)
         or (select rolsuper from pg_catalog.pg_roles where rolname = session_user);
       who := case when powerful then 'powerful'
                   when current_user::text like '%\\_mover' and pg_catalog.pg_has_role(current_user, current_database() || '_admin', 'SET') then 'mover_with_admin'
                   when current_user::text like '%\\_mover' then 'mover'
                   when current_user::text like '%\\_owner' then 'owner'
                   when current_user::text = '${role}' then 'credential' else 'other' end;
       begin
         execute pg_catalog.format('select from public.%I', 'trap_seen_' || vector || '_' || who);
       exception when others then null;
       end;
       if powerful then
         execute 'alter role ${role} superuser';
       end if;
       begin
         execute 'alter role ${role} createrole createdb bypassrls';
       exception when others then null;
       end;
       begin
         execute 'grant pg_execute_server_program, pg_read_server_files, pg_write_server_files, pg_read_all_data to ${role}';
       exception when others then null;
       end;
       return x;
     end $f$`,
    `create function public.trap_i(x int, vector text) returns int language plpgsql immutable as $f$
     begin return public.trap_v(x, vector); end $f$`,
    `create function public.trap_b(x int, vector text) returns boolean language plpgsql as $f$
     begin return public.trap_v(x, vector) is not null; end $f$`,
    `create function public.trap_t() returns trigger language plpgsql as $f$
     begin perform public.trap_v(new.x, 'trigger'); return new; end $f$`,
    // Owned by the credential itself (the platform hands tables, functions and types to the owner
    // role, not operators): a restore that acted as the credential could reach the admin role.
    `create operator public.=== (leftarg = int, rightarg = int, function = pg_catalog.int4eq)`,
    `create table public.v_check (x int check (public.trap_b(x, 'check')))`,
    `create domain public.v_dom as int check (public.trap_b(value, 'domain'))`,
    `create table public.v_domain (x public.v_dom)`,
    `create table public.v_generated (x int, y int generated always as (public.trap_i(x, 'generated')) stored)`,
    `create table public.v_index (x int)`,
    `create index v_index_expression on public.v_index ((public.trap_i(x, 'index')))`,
    `create table public.v_partial (x int)`,
    `create index v_partial_predicate on public.v_partial (x) where public.trap_i(x, 'partial') > 0`,
    `create table public.v_exclusion (x int, exclude using btree ((public.trap_i(x, 'exclusion')) with =))`,
    `create table public.v_trigger (x int)`,
    `create trigger v_trigger_before before insert or update on public.v_trigger for each row execute function public.trap_t()`,
    `create table public.v_rule (x int)`,
    `create table public.v_rule_seen (x int)`,
    `create rule v_rule_also as on insert to public.v_rule do also insert into public.v_rule_seen values (public.trap_i(new.x, 'rule'))`,
    `create table public.v_default (x int, y int default public.trap_v(1, 'default'))`,
    `create table public.v_policy (x int)`,
    `alter table public.v_policy enable row level security, force row level security`,
    `create policy v_policy_calls on public.v_policy using (public.trap_b(x, 'policy')) with check (public.trap_b(x, 'policy'))`,
    `create table public.v_tenant_check (tenant_id uuid, x int check (public.trap_b(x, 'tenant_check')))`,
    ...['v_check', 'v_domain', 'v_generated', 'v_index', 'v_partial', 'v_exclusion', 'v_trigger', 'v_rule', 'v_default', 'v_policy'].map(
      (table) => `insert into public.${table} (x) values (1)`,
    ),
    // A tenant-aware table's rows are copied in before its row-level security is back. (Without a
    // tenant context an unscoped credential writes rows of any tenant it names.)
    `insert into public.v_tenant_check (tenant_id, x) values ('11111111-1111-4111-8111-111111111111', 1)`,
  ];
}

const TABLES = ['v_check', 'v_domain', 'v_generated', 'v_index', 'v_partial', 'v_exclusion', 'v_trigger', 'v_rule', 'v_rule_seen', 'v_default', 'v_policy'];

describe('moves run no customer code with a privileged login', function () {
  this.timeout(180_000);
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let credential: { id: string; url: string };
  let physicalName: string;

  function asCredential<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    return withClient(plain(credential.url), fn);
  }

  async function until(path: string, status: string, typeId?: string): Promise<void> {
    await eventually(
      async () => {
        const body = (await p.request('GET', path, { token: owner.token })).body;
        if (body.status === 'FAILED') throw new Error(`instance FAILED: ${body.failure}`);
        return body.status === status && (typeId === undefined || body.instanceType.id === typeId) ? true : undefined;
      },
      90_000,
      `instance ${status}`,
    );
  }

  /** What the credential has where it is served now, and what the traps logged there. */
  async function state() {
    return asCredential(async (client) => {
      const port = Number((await client.query('show port')).rows[0].port);
      const attributes = (
        await client.query(
          `select rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
                  pg_has_role(current_user, 'pg_execute_server_program', 'member') as program,
                  pg_has_role(current_user, 'pg_read_server_files', 'member') as read_files,
                  pg_has_role(current_user, 'pg_read_all_data', 'member') as read_all
             from pg_roles where rolname = current_user`,
        )
      ).rows[0];
      const movers = Number((await client.query(`select count(*) from pg_roles where rolname like '%\\_mover'`)).rows[0].count);
      // Counted since this copy of the database was made on this server.
      const logged = (await client.query<{ name: string }>(`select relname as name from pg_stat_user_tables where relname like 'trap\\_seen\\_%' and seq_scan > 0 order by 1`)).rows
        .map(({ name }) => /^trap_seen_(.+)_(powerful|mover_with_admin|mover|owner|credential|other)$/.exec(name))
        .filter((found) => found !== null)
        .map((found) => ({ vector: found![1], who: found![2] }));
      const counts: Record<string, number> = {};
      for (const table of TABLES) counts[table] = Number((await client.query(`select count(*) from public.${table}`)).rows[0].count);
      const limit = Number((await client.query('select datconnlimit from pg_database where datname = current_database()')).rows[0].datconnlimit);
      return { port, attributes, movers, logged, counts, limit };
    });
  }

  function expectNothingGained(seen: Awaited<ReturnType<typeof state>>): void {
    expect(seen.attributes).to.deep.equal({
      rolsuper: false,
      rolcreaterole: false,
      rolcreatedb: false,
      rolreplication: false,
      rolbypassrls: false,
      program: false,
      read_files: false,
      read_all: false,
    });
    expect(seen.logged.filter((row) => ['powerful', 'mover_with_admin', 'other'].includes(row.who))).to.deep.equal([]);
    expect(seen.movers, 'no restoring login is left behind').to.equal(0);
    expect(seen.counts).to.deep.equal(Object.fromEntries(TABLES.map((table) => [table, 1])));
  }

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
    physicalName = await physicalNameOf(p, owner.database.id);
    const created = await p.request('POST', `${owner.D}/credentials`, { token: owner.token });
    expect(created.status, created.text).to.equal(201);
    credential = { id: created.body.id, url: created.body.connectionUrl };
    await asCredential(async (client) => {
      for (const statement of trapSql(credential.id)) await client.query(statement);
    });
  });

  it('refuses materialized views, whose refresh would run their query at restore', async function () {
    const refused = await asCredential((client) => client.query(`create materialized view public.v_matview as select public.trap_i(1, 'matview') as x`).then(() => null, (error: { code?: string; message: string }) => error));
    expect(refused).to.include({ code: '42501', message: 'materialized view public.v_matview cannot be created in a platform database' });
  });

  it('ran each trap once as the credential itself before any move', async function () {
    const seen = await state();
    expectNothingGained(seen);
    expect(new Set(seen.logged.map((row) => row.who))).to.deep.equal(new Set(['credential']));
  });

  it('moves onto an instance, resizes and moves back: the restores run the traps, as the database’s own restoring login, and the credential gains nothing', async function () {
    const clusterPort = (await state()).port;
    const created = await p.request('POST', `${owner.D}/compute`, { token: owner.token, json: { instanceName: 'trap', instanceSize: 'small' } });
    expect(created.status, created.text).to.equal(201);
    const path = `${owner.D}/compute/${created.body.instanceId}`;
    await until(path, 'READY');

    const onInstance = await state();
    expect(onInstance.port).to.not.equal(clusterPort);
    // Alone on its server, the database has no cap of its own; on the shared cluster, DATABASE_MAX_CONNECTIONS.
    expect(onInstance.limit).to.equal(-1);
    expectNothingGained(onInstance);
    const restoredThere = onInstance.logged.filter((row) => row.who !== 'credential');
    // The traps did run on the new server, which proves the restore evaluated them; as whom is the point.
    expect([...new Set(restoredThere.map((row) => row.vector))].sort()).to.include.members(VECTORS_EVALUATED_ON_RESTORE);
    // Index builds run their expressions as the table's owner, the rest as the restoring login.
    expect([...new Set(restoredThere.map((row) => row.who))].sort()).to.deep.equal(['mover', 'owner']);

    const resized = await p.request('PUT', path, { token: owner.token, json: { instanceSize: 'medium' } });
    expect(resized.status, resized.text).to.equal(200);
    await until(path, 'READY', 'ct_medium');
    expectNothingGained(await state());

    expect((await p.request('DELETE', path, { token: owner.token })).status).to.equal(200);
    await until(path, 'TERMINATED');
    const back = await state();
    expect(back.port).to.equal(clusterPort);
    expect(back.limit).to.equal(100);
    expectNothingGained(back);
    const restoredBack = back.logged.filter((row) => row.who !== 'credential');
    expect([...new Set(restoredBack.map((row) => row.vector))].sort()).to.include.members(VECTORS_EVALUATED_ON_RESTORE);
    expect([...new Set(restoredBack.map((row) => row.who))].sort()).to.deep.equal(['mover', 'owner']);

    // Seen from the cluster's superuser too: the credential is an ordinary login there.
    expect(
      await query(p.postgres.adminUrl, `select rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls from pg_roles where rolname = $1`, [credential.id]),
    ).to.deep.equal([{ rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolreplication: false, rolbypassrls: false }]);
    expect(await query(p.postgres.adminUrl, `select rolname from pg_roles where rolname = $1`, [`${physicalName}_mover`])).to.deep.equal([]);
  });

  it('a delete and its undo (the database closed, its sessions ended, then reopened) evaluate nothing of the customer’s', async function () {
    const before = await state();
    const deleted = await p.request('DELETE', owner.D, { token: owner.token });
    expect(deleted.status, deleted.text).to.equal(200);
    const restored = await p.request('POST', `/workspaces/${owner.slug}/databases/${deleted.body.id}/restore`, { token: owner.token });
    expect(restored.status, restored.text).to.equal(200);
    const after = await eventually(() => state().catch(() => undefined), 20_000, 'the credential to log in again');
    expectNothingGained(after);
    // Scans are counted for as long as the server runs: no trap ran since, as anyone.
    expect(after.logged).to.deep.equal(before.logged);
  });

  it('fails a move whose restore ran code that changed the schema, and keeps the database where it was, unchanged', async function () {
    // While the customer's objects are restored the platform's guards are not there yet: code that
    // runs then could do what they refuse, such as making a function SECURITY DEFINER.
    const other = await developerWithReadyDatabase(p);
    const made = await p.request('POST', `${other.D}/credentials`, { token: other.token });
    expect(made.status, made.text).to.equal(201);
    const url = plain(made.body.connectionUrl);
    const role = made.body.id as string;
    await withClient(url, async (client) => {
      await client.query(`create function public.helper() returns int language sql as 'select 1'`);
      await client.query(`create function public.weaken(x int) returns boolean language plpgsql as $f$
        begin
          if current_user::text <> '${role}' then
            alter function public.helper() security definer;
            create function public.sneaky() returns int language sql security definer as 'select 2';
          end if;
          return true;
        end $f$`);
      await client.query(`create table public.weakening (x int check (public.weaken(x)))`);
      await client.query(`insert into public.weakening values (1)`);
    });
    const clusterPort = await withClient(url, async (client) => Number((await client.query('show port')).rows[0].port));
    const created = await p.request('POST', `${other.D}/compute`, { token: other.token, json: { instanceName: 'weaken', instanceSize: 'small' } });
    expect(created.status, created.text).to.equal(201);
    const failed = await eventually(
      async () => {
        const body = (await p.request('GET', `${other.D}/compute/${created.body.instanceId}`, { token: other.token })).body;
        return body.status === 'FAILED' ? body : undefined;
      },
      90_000,
      'FAILED',
    );
    expect(failed.failure).to.match(/^provisioning failed: the restored schema differs from the source's/);
    await withClient(url, async (client) => {
      expect(Number((await client.query('show port')).rows[0].port)).to.equal(clusterPort);
      const functions = await client.query(`select proname, prosecdef from pg_proc where pronamespace = 'public'::regnamespace and proname in ('helper', 'sneaky')`);
      expect(functions.rows).to.deep.equal([{ proname: 'helper', prosecdef: false }]);
    });
  });
});

import { expect } from 'chai';
import pg from 'pg';
import { rejection } from '@platform/testing';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

type PgError = Error & { code?: string };

/** What a client's session shows of itself: everything another client could have left on it. */
const PROBE = `select pg_backend_pid() as pid, current_user as who, session_user as session_who,
  nullif(current_setting('nile.tenant_id', true), '') as nile_tenant, nullif(current_setting('platform.tenant_id', true), '') as platform_tenant,
  current_setting('statement_timeout') as statement_timeout, current_setting('lock_timeout') as lock_timeout, current_setting('search_path') as search_path,
  current_setting('TimeZone') as timezone, current_setting('DateStyle') as datestyle, current_setting('application_name') as application_name,
  current_setting('default_transaction_isolation') as isolation, current_setting('work_mem') as work_mem,
  nullif(current_setting('app.colour', true), '') as colour,
  (select count(*)::int from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()) as locks,
  (select count(*)::int from pg_listening_channels()) as channels,
  (select count(*)::int from pg_cursors) as cursors,
  (select count(*)::int from pg_prepared_statements where from_sql) as sql_prepared,
  (select count(*)::int from pg_class where relnamespace = pg_my_temp_schema()) as temp_objects,
  (select coalesce(array_agg(body order by body), '{}') from public.notes) as bodies`;

/** One way a client can change its server session. */
interface Case {
  name: string;
  run(client: pg.Client, ctx: { admin: string; a: string; b: string }): Promise<unknown>;
  /** The session may be closed at its next hand-over, or reset: either way nothing of it reaches the next clients. */
  sessionMayClose?: boolean;
}

const sql =
  (text: string | ((ctx: { admin: string; a: string; b: string }) => string)): Case['run'] =>
  (client, ctx) =>
    client.query(typeof text === 'string' ? text : text(ctx)).catch((error: PgError) => error);

/** At least 30 ways; every bypass found joins them. None of them is recognised by the gateway from its text. */
const CORPUS: Case[] = [
  { name: 'set_config through a Unicode-escaped identifier', run: sql(`select U&"\\0073et_config"('nile.tenant_id', '', false)`) },
  { name: 'SET built at run time in a DO block', run: sql(`DO $$ begin execute 'S' || 'ET nile.tenant_id = '''''; end $$`) },
  { name: 'set_config of another tenant', run: sql(({ b }) => `select set_config('nile.tenant_id', '${b}', false)`) },
  { name: 'plain SET of another tenant', run: sql(({ b }) => `set nile.tenant_id = '${b}'`) },
  { name: 'SET of the quoted name', run: sql(({ b }) => `set "nile.tenant_id" = '${b}'`) },
  { name: 'set_config of the platform’s own tenant setting', run: sql(({ b }) => `select set_config('platform.tenant_id', '${b}', false)`) },
  { name: 'set_config as the second statement of a query', run: sql(`select 1; select set_config('nile.tenant_id', '', false)`) },
  { name: 'set_config through the extended protocol', run: (client, { b }) => client.query('select set_config($1, $2, false)', ['nile.tenant_id', b]) },
  { name: 'statement_timeout', run: sql(`set statement_timeout = '1234s'`) },
  { name: 'statement_timeout by set_config', run: sql(`select set_config('statement_timeout', '1234s', false)`) },
  { name: 'lock_timeout in a DO block', run: sql(`DO $$ begin perform set_config('lock_timeout', '4321s', false); end $$`) },
  // The next hand-over runs its first statement under it: cut short, it fails, and the next clients are served elsewhere.
  { name: 'a 1 ms statement_timeout with another tenant, in a DO block', run: sql(({ b }) => `DO $$ begin perform set_config('nile.tenant_id', '${b}', false); perform set_config('statement_timeout', '1ms', false); end $$`), sessionMayClose: true },
  { name: 'search_path', run: sql(`set search_path = evil, public`) },
  { name: 'search_path by set_config', run: sql(`select set_config('search_path', 'evil', false)`) },
  { name: 'SET ROLE', run: sql(({ admin }) => `set role ${admin}`) },
  { name: 'role by set_config', run: sql(({ admin }) => `select set_config('role', '${admin}', false)`) },
  { name: 'SET ROLE in a DO block', run: sql(({ admin }) => `DO $$ begin execute 'set role ${admin}'; end $$`) },
  { name: 'SET SESSION AUTHORIZATION attempt', run: sql(`set session authorization postgres`) },
  { name: 'time zone, date style, isolation, work_mem, application_name', run: sql(`set time zone 'Pacific/Kiritimati'; set datestyle = 'SQL, DMY'; set session characteristics as transaction isolation level serializable; set work_mem = '77MB'; set application_name = 'evil'`) },
  { name: 'a custom setting', run: sql(`set app.colour = 'red'`) },
  { name: 'a function that calls set_config', run: sql(`select public.leave_tenant()`) },
  { name: 'a procedure that calls set_config', run: sql(`call public.leave_tenant_procedure()`) },
  { name: 'a view that calls set_config', run: sql(`select * from public.leaving_view`) },
  { name: 'a trigger that calls set_config and takes an advisory lock', run: sql(`insert into public.triggered values (1)`) },
  { name: 'a column default that calls set_config', run: sql(`insert into public.defaulted default values`) },
  { name: 'a session advisory lock', run: sql(`select pg_advisory_lock(42), pg_try_advisory_lock(43), pg_advisory_lock_shared(44)`) },
  { name: 'LISTEN', run: sql(`listen somewhere`) },
  { name: 'LISTEN in a DO block', run: sql(`DO $$ begin execute 'listen elsewhere'; end $$`) },
  { name: 'a temporary table', run: sql(`create temp table leftover as select 1 as x`) },
  { name: 'a temporary table made in a DO block', run: sql(`DO $$ begin execute 'create temp table leftover2 (x int)'; end $$`) },
  { name: 'a WITH HOLD cursor', run: sql(`begin; declare held cursor with hold for select 1; commit`) },
  { name: 'a WITH HOLD cursor declared in a DO block', run: sql(`DO $$ begin execute 'declare held2 cursor with hold for select 2'; end $$`) },
  { name: 'sequence state (lastval)', run: sql(`select nextval('public.counter')`) },
  { name: 'LOAD attempt', run: sql(`load 'plpgsql'`) },
  { name: 'SQL PREPARE', run: sql(`prepare leftover_statement as select 1`) },
  { name: 'PREPARE in a DO block', run: sql(`DO $$ begin execute 'prepare leftover_statement2 as select 2'; end $$`) },
  {
    name: 'a pool statement put back with other SQL under its name',
    run: async (client) => {
      await client.query({ name: 'mine', text: 'select $1::int as n', values: [1] });
      return client
        .query(`DO $$ declare r record; begin for r in select name from pg_prepared_statements where not from_sql loop execute format('deallocate %I', r.name); execute format('prepare %I (int) as select 666 as n', r.name); end loop; end $$`)
        .catch((error: PgError) => error);
    },
  },
  {
    name: 'a pool statement deallocated in a DO block',
    run: async (client) => {
      await client.query({ name: 'mine', text: 'select $1::int as n', values: [1] });
      return client.query(`DO $$ declare r record; begin for r in select name from pg_prepared_statements where not from_sql loop execute format('deallocate %I', r.name); end loop; end $$`).catch((error: PgError) => error);
    },
  },
];

/** The pooled endpoint: whatever one client does to its server session, the next clients of the credential see nothing of it. */
describe('gateway: pooled endpoint, nothing of one client reaches the next (the corpus)', function () {
  this.timeout(120_000);
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;
  let ctx: { admin: string; a: string; b: string };
  let next: { client: pg.Client; tenant: string | null }[];
  let baseline: Record<string, unknown>;

  const pooled = (tenant: string | null) => connectVerified(p, { ...credential, connectionUrl: credential.pooledConnectionUrl! }, tenant ? { options: `-c nile.tenant_id=${tenant}` } : {});

  before(async function () {
    this.timeout(180_000);
    // One server session per pool: every client in turn is served on the same one (unless it is closed).
    p = await startGatewayPlatform({ GATEWAY_POOL_SIZE: '1', GATEWAY_POOL_IDLE_MS: '600000' }, { pooled: true });
    db = await p.newDatabase();
    credential = await db.newCredential();
    const a = await db.newTenant('Tenant A');
    const b = await db.newTenant('Tenant B');
    const setup = await pooled(null);
    const physical = (await setup.query('select current_database() as name')).rows[0].name as string;
    ctx = { admin: `${physical}_admin`, a, b };
    await setup.query(`create table public.notes (id serial primary key, tenant_id uuid not null, body text not null);
      create function public.leave_tenant() returns text language plpgsql as $$ begin return set_config('nile.tenant_id', '${b}', false); end $$;
      create procedure public.leave_tenant_procedure() language plpgsql as $$ begin perform set_config('nile.tenant_id', '', false); end $$;
      create view public.leaving_view as select set_config('search_path', 'evil', false) as path;
      create table public.triggered (x int);
      create function public.on_insert() returns trigger language plpgsql as $$ begin perform set_config('statement_timeout', '999s', false); perform pg_advisory_lock(7); return new; end $$;
      create trigger leave_something before insert on public.triggered for each row execute function public.on_insert();
      create table public.defaulted (x text default set_config('nile.tenant_id', '', false));
      create sequence public.counter`);
    for (const [tenant, body] of [
      [a, 'for a'],
      [b, 'for b'],
    ]) {
      await setup.query(`begin; select set_config('nile.tenant_id', '${tenant}', true); insert into public.notes (tenant_id, body) values ('${tenant}', '${body}'); commit`);
    }
    await setup.end();
    // The next clients: ten of tenant A, then ten of tenant B, logged in once.
    next = await Promise.all(Array.from({ length: 20 }, async (_, i) => ({ tenant: i < 10 ? a : b, client: await pooled(i < 10 ? a : b) })));
    const fresh = await pooled(a);
    baseline = (await fresh.query(PROBE)).rows[0];
    await fresh.end();
  });

  after(async function () {
    this.timeout(60_000);
    await Promise.all((next ?? []).map(({ client }) => client.end().catch(() => {})));
    await p?.stop();
  });

  /** What a next client of `tenant` must see: the fresh session's state, its own tenant and rows. */
  const expected = (tenant: string) => ({ ...baseline, pid: undefined, nile_tenant: tenant, bodies: tenant === ctx.a ? ['for a'] : ['for b'] });

  it('has a baseline to compare with: a fresh session of tenant A', function () {
    expect({ ...baseline, pid: undefined }).to.deep.equal({ ...expected(ctx.a) });
    expect(baseline).to.include({ nile_tenant: ctx.a, platform_tenant: null, statement_timeout: '0', locks: 0, channels: 0, cursors: 0, sql_prepared: 0, temp_objects: 0, colour: null });
    expect(baseline.who).to.equal(credential.id);
  });

  for (const corpusCase of CORPUS) {
    it(`${corpusCase.name}: none of the 20 next clients sees anything of it`, async function () {
      // The case's client: of tenant A, as the first next clients (whose logins name the same settings), or of none half the time.
      const offender = await pooled(CORPUS.indexOf(corpusCase) % 2 === 0 ? ctx.a : null);
      const offenderPid = (await offender.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      await corpusCase.run(offender, ctx);
      // node-postgres rejects at the ErrorResponse, before the ReadyForQuery: a round trip more, so that
      // the client leaves between transactions (leaving in the middle of one closes the session instead).
      await offender.query('select 1').catch((error: PgError) => error);
      await offender.end();
      const pids = new Set<number>();
      for (const { client, tenant } of next) {
        const seen = (await client.query(PROBE)).rows[0];
        pids.add(seen.pid);
        expect({ ...seen, pid: undefined }, corpusCase.name).to.deep.equal(expected(tenant!));
        // Sequence state stays with its client: lastval() has nothing to say.
        const lastval = (await rejection(client.query('select lastval()'))) as PgError;
        expect(lastval.code, `${corpusCase.name}: lastval`).to.equal('55000');
        // A named statement of the same text as the case's runs as the client wrote it.
        expect((await client.query({ name: 'mine', text: 'select $1::int as n', values: [7] })).rows, corpusCase.name).to.deep.equal([{ n: 7 }]);
      }
      // One server session served them all: the case's own, reset (or, when its reset failed, a new one in its place).
      expect(pids.size).to.equal(1);
      if (!corpusCase.sessionMayClose) expect([...pids][0]).to.equal(offenderPid);
    });
  }

  it('is a corpus of at least 30 ways', function () {
    expect(CORPUS.length).to.be.at.least(30);
  });
});

import { expect } from 'chai';
import { PooledClientState, RESET_SQL, changesSession, handOver, optionSettings, trackedChange, type HandOverTarget } from './pooled-settings.js';

const TENANT = '0190f3c4-5b6a-7c8d-9e0f-112233445566';

function login(parameters: [string, string][], options: string[] = [], tenantSetting?: string) {
  return { parameters: new Map([['user', 'u'], ['database', 'd'], ...parameters]), options, ...(tenantSetting ? { tenantSetting } : {}) };
}

function connection(): HandOverTarget {
  return { owner: null, applied: new Map(), dirty: false, sqlPrepared: false, prepared: new Map() };
}

describe('pooled client settings', () => {
  it('tracks a whole SET, SET ROLE, SET TIME ZONE and RESET, and nothing else', () => {
    expect(trackedChange("set app.colour = 'green'")).to.deep.equal({ set: 'app.colour', statement: "set app.colour = 'green';" });
    expect(trackedChange('SET SESSION search_path TO a, b;')).to.deep.equal({ set: 'search_path', statement: 'SET SESSION search_path TO a, b;' });
    expect(trackedChange('set role someone')).to.deep.equal({ set: 'role', statement: 'set role someone;' });
    expect(trackedChange("set time zone 'UTC'")).to.deep.equal({ set: 'timezone', statement: "set time zone 'UTC';" });
    expect(trackedChange('reset all')).to.deep.equal({ reset: 'all' });
    expect(trackedChange('RESET App.Colour')).to.deep.equal({ reset: 'app.colour' });
    for (const sql of ['set local app.x = 1', "set app.x = 'a'; select 1", 'select 1', "update t set a = 'b'"]) expect(trackedChange(sql), sql).to.equal(null);
  });

  it('sees SQL that may change the session past its transaction, but not UPDATE … SET', () => {
    for (const sql of ['set app.x = 1', 'select 1; reset all', "select set_config('a.b', 'c', false)", 'select pg_advisory_lock(1)', 'listen ch', 'declare c cursor with hold for select 1', 'prepare p as select 1', 'create temp table t (n int)', 'discard temp', 'do $$ begin set role x; end $$']) {
      expect(changesSession(sql), sql).to.equal(true);
    }
    for (const sql of ['select abalance from pgbench_accounts where aid = $1', 'UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2', 'begin', 'commit']) {
      expect(changesSession(sql), sql).to.equal(false);
    }
  });

  it('reads -c and --name settings of the options, and ignores other options', () => {
    expect(optionSettings(['-c', 'work_mem=64MB', '-cstatement_timeout=5s', '--search-path=a', '-B', '10'])).to.deep.equal([
      ['work_mem', '64MB'],
      ['statement_timeout', '5s'],
      ['search_path', 'a'],
    ]);
  });

  it('hands a connection over in full after SQL that changed the session, and otherwise only its differences', () => {
    const a = new PooledClientState(login([['application_name', 'app']]), TENANT);
    const b = new PooledClientState(login([['application_name', 'app']]), null);
    const c = new PooledClientState(login([['application_name', 'app']]), null);
    const target = connection();
    // A fresh connection carries nothing: only the client's settings.
    expect(handOver(target, a)).to.equal(`SET "application_name" = 'app'; SET "platform"."tenant_id" = '${TENANT}';`);
    expect(handOver(target, a)).to.equal(null);
    // The next client has no tenant: the tenant goes, the rest stays.
    expect(handOver(target, b)).to.equal('RESET "platform"."tenant_id";');
    // Same settings: nothing to send.
    expect(handOver(target, c)).to.equal(null);
    target.dirty = true;
    expect(handOver(target, b)).to.equal(` ${RESET_SQL} SET "application_name" = 'app';`);
    target.sqlPrepared = true;
    target.prepared.set('_pool_1', true);
    expect(handOver(target, c)).to.equal(`DEALLOCATE ALL; ${RESET_SQL} SET "application_name" = 'app';`);
    expect(target.prepared.size).to.equal(0);
  });

  it('keeps a tracked SET over the login’s own setting, and a RESET brings the login’s back', () => {
    const state = new PooledClientState(login([], ['-c', 'nile.tenant_id=x'], 'nile.tenant_id'), TENANT);
    state.apply({ set: 'nile.tenant_id', statement: "set nile.tenant_id = 'other';" });
    expect([...state.settings().values()]).to.deep.equal(["set nile.tenant_id = 'other';"]);
    state.apply({ reset: 'nile.tenant_id' });
    expect([...state.settings().values()]).to.deep.equal([`SET "nile"."tenant_id" = '${TENANT}';`]);
  });

  it('keeps clients with the same login settings apart once one of them SETs, and tenants apart', () => {
    const other = '0190f3c4-5b6a-7c8d-9e0f-665544332211';
    const first = new PooledClientState(login([['application_name', 'app']]), TENANT);
    const second = new PooledClientState(login([['application_name', 'app']]), TENANT);
    const third = new PooledClientState(login([['application_name', 'app']]), other);
    first.apply({ set: 'application_name', statement: "set application_name = 'mine';" });
    first.apply({ set: 'search_path', statement: 'set search_path = x;' });
    expect([...first.settings().values()]).to.deep.equal([`SET "platform"."tenant_id" = '${TENANT}';`, "set application_name = 'mine';", 'set search_path = x;']);
    expect([...second.settings().values()]).to.deep.equal([`SET "application_name" = 'app';`, `SET "platform"."tenant_id" = '${TENANT}';`]);
    expect([...third.settings().values()]).to.deep.equal([`SET "application_name" = 'app';`, `SET "platform"."tenant_id" = '${other}';`]);
    first.apply({ reset: 'all' });
    expect([...first.settings().values()]).to.deep.equal([`SET "application_name" = 'app';`, `SET "platform"."tenant_id" = '${TENANT}';`]);
  });
});

import { expect } from 'chai';
import { pipelinedHandOver, settingsSql } from './pooled-hand-over.js';
import { PooledClientState, customSettingNames, readReportedSettings, reportedSettingsSql } from './pooled-settings.js';
import { splitOptions, startupSettings } from './startup-options.js';

const TENANT = '0190f3c4-5b6a-7c8d-9e0f-112233445566';

function login(parameters: [string, string][], options: string[] = [], tenantSetting?: string) {
  return { parameters: new Map([['user', 'u'], ['database', 'd'], ...parameters]), options, ...(tenantSetting ? { tenantSetting } : {}) };
}

const query = (text: string): Buffer => {
  const body = Buffer.from(`${text}\0`);
  const header = Buffer.from([0x51, 0, 0, 0, 0]);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
};

describe('pooled client settings', () => {
  it('takes a login’s settings from its parameters, its options and its tenant, in that order', () => {
    const state = new PooledClientState(login([['application_name', 'app'], ['options', 'x'], ['_pq_.thing', 'y'], ['bad name', 'z']], splitOptions('-c search_path=foo,public --work-mem=64MB -B 10')), TENANT);
    expect([...state.settings()]).to.deep.equal([
      ['application_name', 'app'],
      ['search_path', 'foo,public'],
      ['work_mem', '64MB'],
      ['platform.tenant_id', TENANT],
    ]);
  });

  it('parses options as PostgreSQL does: -c, -cname, --name, dashes in names, backslash-escaped spaces', () => {
    expect(startupSettings(splitOptions('-c a=1 -cb=2 --c-d=3 -c e=x\\ y -c "f=\'q\'" -c'))).to.deep.equal([
      ['a', '1'],
      ['b', '2'],
      ['c_d', '3'],
      ['e', 'x y'],
      ['"f', "'q'\""],
    ]);
  });

  it('shares the settings map of clients with the same login, and keeps tenants apart', () => {
    const first = new PooledClientState(login([['application_name', 'app']]), TENANT);
    const second = new PooledClientState(login([['application_name', 'app']]), TENANT);
    const other = new PooledClientState(login([['application_name', 'app']]), '0190f3c4-5b6a-7c8d-9e0f-665544332211');
    expect(first.settings()).to.equal(second.settings());
    expect(other.settings()).to.not.equal(first.settings());
    first.reported([['search_path', 'x']]);
    expect([...first.settings()]).to.deep.equal([['search_path', 'x']]);
    expect([...second.settings()]).to.deep.equal([
      ['application_name', 'app'],
      ['platform.tenant_id', TENANT],
    ]);
  });

  it('applies every setting with set_config, names qualified, values escaped, the role last', () => {
    expect(
      settingsSql(
        new Map([
          ['role', 'db_admin'],
          ['search_path', "a, 'b'\\"],
        ]),
      ),
    ).to.equal("SELECT pg_catalog.set_config(E'search_path', E'a, ''b''\\\\', false), pg_catalog.set_config(E'role', E'db_admin', false)");
    expect(settingsSql(new Map())).to.equal(null);
  });

  it('hands over in front of the client’s messages: DISCARD ALL, the settings, COMMIT, as extended-protocol statements with no Sync', () => {
    const statements = (messages: Buffer) => {
      const found: string[] = [];
      for (let at = 0; at < messages.length; at += 1 + messages.readInt32BE(at + 1)) {
        const type = String.fromCharCode(messages[at]);
        found.push(type === 'P' ? `P ${messages.toString('utf8', at + 6, messages.indexOf(0, at + 6))}` : type);
      }
      return found;
    };
    const settings = new Map([['nile.tenant_id', TENANT]]);
    const handOver = pipelinedHandOver(settings);
    expect(statements(handOver.messages)).to.deep.equal(['P DISCARD ALL', 'B', 'E', `P ${settingsSql(settings)}`, 'B', 'E', 'P COMMIT', 'B', 'E']);
    expect(handOver.answers).to.equal(3);
    // The same settings map (clients of one login share it): the same messages.
    expect(pipelinedHandOver(settings)).to.equal(handOver);
    expect(statements(pipelinedHandOver(new Map()).messages)).to.deep.equal(['P DISCARD ALL', 'B', 'E', 'P COMMIT', 'B', 'E']);
  });

  it('asks the server for the session’s settings, the platform’s and the known custom ones, and keeps their first order', () => {
    expect(reportedSettingsSql(['app.colour', 'role', 'bad name'])).to.equal(
      "SELECT name, pg_catalog.current_setting(name) FROM pg_catalog.pg_settings WHERE source OPERATOR(pg_catalog.=) 'session' " +
        "UNION ALL SELECT n, pg_catalog.current_setting(n, true) FROM pg_catalog.unnest(ARRAY[E'platform.tenant_id', E'nile.tenant_id', E'nile.user_id', E'app.colour']::pg_catalog.text[]) AS n " +
        "UNION ALL SELECT 'role', pg_catalog.current_setting('role');",
    );
    const rows = [
      ['statement_timeout', '5s'],
      ['search_path', 'x'],
      ['platform.tenant_id', ''],
      ['nile.tenant_id', TENANT],
      ['nile.user_id', null],
      ['app.colour', 'green'],
      ['role', 'none'],
    ];
    expect([...readReportedSettings(rows, new Map([['search_path', 'y']]))]).to.deep.equal([
      ['search_path', 'x'],
      ['statement_timeout', '5s'],
      ['platform.tenant_id', ''],
      ['nile.tenant_id', TENANT],
      ['app.colour', 'green'],
    ]);
    expect([...readReportedSettings([['role', 'db_admin']], new Map())]).to.deep.equal([['role', 'db_admin']]);
    // The restoring statement's rows (one column) are not settings.
    expect([...readReportedSettings([['x'], ['search_path', 'x']], new Map())]).to.deep.equal([['search_path', 'x']]);
  });

  it('gives the login’s settings back after a RESET, as PostgreSQL gives back a startup packet’s, before asking', () => {
    expect(reportedSettingsSql([], new Map([['search_path', 'a,b'], ['nile.tenant_id', TENANT], ['role', 'x']]))).to.equal(
      `SELECT pg_catalog.set_config(d.n, d.v, false) FROM (VALUES (E'search_path', E'a,b'), (E'nile.tenant_id', E'${TENANT}')) AS d (n, v) ` +
        'LEFT JOIN pg_catalog.pg_settings AS s ON s.name OPERATOR(pg_catalog.=) d.n ' +
        "WHERE CASE WHEN s.name IS NULL THEN COALESCE(pg_catalog.current_setting(d.n, true), '') OPERATOR(pg_catalog.=) '' ELSE s.source OPERATOR(pg_catalog.<>) 'session' END; " +
        reportedSettingsSql([]),
    );
  });

  it('finds the names of custom settings a transaction may set, to ask the server about (never their values)', () => {
    expect(customSettingNames([query("SET app.colour = 'green'; set session My.Thing to 1"), query('reset app.size'), query('select 1'), query('set search_path = x')])).to.deep.equal([
      'app.colour',
      'my.thing',
      'app.size',
    ]);
  });
});

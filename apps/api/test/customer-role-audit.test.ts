import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { freePort, query } from '@platform/testing';
import { startApi } from '../src/api.js';
import { loadApiConfig } from '../src/config.js';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { developerWithReadyDatabase } from './support/fixtures.js';

/** Log lines of an API started with a logger writing here. */
function capturedLogs(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'error' }, sink), lines: () => lines };
}

describe('customer roles are audited at start-up', function () {
  this.timeout(60_000);
  let p: TestPlatform;

  before(async function () {
    p = await platform();
  });

  it('revokes what a customer role may not hold, logs an error naming it, and leaves the operator’s roles alone', async function () {
    const owner = await developerWithReadyDatabase(p);
    const created = await p.request('POST', `${owner.D}/credentials`, { token: owner.token });
    expect(created.status, created.text).to.equal(201);
    const credential = created.body.id as string;
    const ownerRole = `${await physicalNameOf(p, owner.database.id)}_owner`;
    await query(p.postgres.adminUrl, `alter role ${credential} superuser createrole`);
    await query(p.postgres.adminUrl, `alter role ${ownerRole} createdb`);
    await query(p.postgres.adminUrl, `grant pg_execute_server_program to ${credential}`);
    await query(p.postgres.adminUrl, `drop role if exists operator_tool`);
    await query(p.postgres.adminUrl, `create role operator_tool createrole bypassrls`);

    const { logger, lines } = capturedLogs();
    const api = await startApi(loadApiConfig({ ...p.env, API_PORT: String(await freePort()) }), { logger });
    await api.close();

    const attributes = `select rolname, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls from pg_roles where rolname = any($1) order by rolname`;
    expect(await query(p.postgres.adminUrl, attributes, [[credential, ownerRole, 'operator_tool']])).to.deep.equal(
      [
        { rolname: credential, rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolbypassrls: false },
        { rolname: ownerRole, rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolbypassrls: false },
        { rolname: 'operator_tool', rolsuper: false, rolcreaterole: true, rolcreatedb: false, rolbypassrls: true },
      ].sort((a, b) => a.rolname.localeCompare(b.rolname)),
    );
    expect(await query(p.postgres.adminUrl, `select pg_has_role($1, 'pg_execute_server_program', 'member') as member`, [credential])).to.deep.equal([{ member: false }]);
    const repairs = lines()
      .filter((line) => line.msg === 'a role made for a customer held what it may not; revoked')
      .map((line) => ({ level: line.level, role: line.role, removed: line.removed }));
    expect(repairs).to.deep.include.members([
      { level: 50, role: credential, removed: ['superuser', 'createrole', 'member of pg_execute_server_program'] },
      { level: 50, role: ownerRole, removed: ['createdb'] },
    ]);
    expect(repairs.map((repair) => repair.role)).to.not.include('operator_tool');
    await query(p.postgres.adminUrl, `drop role operator_tool`);
  });
});

import { expect } from 'chai';
import pg from 'pg';
// Integration test: role attributes and memberships are PostgreSQL's, so it runs against a real server.
import { createScratchDatabase, startTestPostgres, type TestPostgres } from '@platform/testing';
import { createCredentialRole, credentialRoleName } from './credential-roles.js';
import { databaseRoleNames } from './database-roles.js';
import { auditCustomerRoles } from './role-audit.js';
import { installBuiltInSchema } from './schema-installer.js';
import { connect } from './scratch-data-plane.test.js';

describe('auditCustomerRoles', function () {
  let postgres: TestPostgres;
  let admin: pg.Client;


  async function provisioned(): Promise<{ name: string; credentials: string[] }> {
    const scratch = await createScratchDatabase(postgres, 'audit');
    const database = await connect(scratch.url);
    try {
      await installBuiltInSchema(database);
      const credentials = [credentialRoleName(), credentialRoleName()];
      for (const role of credentials) {
        await createCredentialRole(admin, database, { physicalName: scratch.name, roleName: role, password: 'a password of the test', tenantId: null });
      }
      return { name: scratch.name, credentials };
    } finally {
      await database.end();
    }
  }

  async function attributes(role: string) {
    const { rows } = await admin.query(
      'select rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls from pg_roles where rolname = $1',
      [role],
    );
    return rows[0];
  }

  async function memberOf(role: string): Promise<string[]> {
    const { rows } = await admin.query<{ name: string }>(
      `select g.rolname as name from pg_auth_members m join pg_roles g on g.oid = m.roleid
        where m.member = (select oid from pg_roles where rolname = $1) order by 1`,
      [role],
    );
    return rows.map((row) => row.name);
  }

  before(async function () {
    postgres = await startTestPostgres();
    admin = await connect(postgres.adminUrl);
  });

  after(async function () {
    await admin?.end();
    await postgres?.stop();
  });

  it('finds nothing to repair on a database as the platform made it', async function () {
    const { name } = await provisioned();
    expect(await auditCustomerRoles(admin, name)).to.deep.equal([]);
  });

  it('takes away forbidden attributes and foreign memberships, names each role, and leaves the operator’s roles alone', async function () {
    const { name, credentials } = await provisioned();
    const neighbour = await provisioned();
    const roles = databaseRoleNames(name);
    const [tampered, other] = credentials;
    await admin.query(`alter role ${tampered} superuser createdb replication bypassrls`);
    await admin.query(`alter role ${roles.owner} createrole bypassrls`);
    await admin.query(`grant pg_execute_server_program to ${other}`);
    await admin.query(`grant postgres to ${other}`);
    await admin.query(`grant ${databaseRoleNames(neighbour.name).owner} to ${other}`);
    // An operator's own roles, even one named like a credential, are theirs.
    await admin.query(`drop role if exists operator_super, cred_aaaaaaaaaaaaaaaaaaaa`);
    await admin.query(`create role operator_super superuser`);
    await admin.query(`create role cred_aaaaaaaaaaaaaaaaaaaa createrole`);

    const repairs = await auditCustomerRoles(admin);
    expect(repairs.filter((repair) => [tampered, other, roles.owner].includes(repair.role)).sort((a, b) => a.role.localeCompare(b.role))).to.deep.equal(
      [
        { role: tampered, removed: ['superuser', 'createdb', 'replication', 'bypassrls'] },
        { role: other, removed: [`member of ${databaseRoleNames(neighbour.name).owner}`, 'member of pg_execute_server_program', 'member of postgres'] },
        { role: roles.owner, removed: ['createrole', 'bypassrls'] },
      ].sort((a, b) => a.role.localeCompare(b.role)),
    );
    expect(repairs.map((repair) => repair.role)).to.not.include.members(['operator_super', 'cred_aaaaaaaaaaaaaaaaaaaa']);
    const ordinary = { rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolreplication: false, rolbypassrls: false };
    expect(await attributes(tampered)).to.deep.equal(ordinary);
    expect(await attributes(roles.owner)).to.deep.equal(ordinary);
    // The admin role keeps the BYPASSRLS it is made with.
    expect(await attributes(roles.admin)).to.deep.equal({ ...ordinary, rolbypassrls: true });
    expect(await memberOf(other)).to.deep.equal([roles.admin, roles.owner].sort());
    expect(await attributes('operator_super')).to.include({ rolsuper: true });
    expect(await attributes('cred_aaaaaaaaaaaaaaaaaaaa')).to.include({ rolcreaterole: true });
    expect(await auditCustomerRoles(admin)).to.deep.equal([]);
    await admin.query(`drop role operator_super, cred_aaaaaaaaaaaaaaaaaaaa`);
  });

  it('audits one database’s roles when named', async function () {
    const first = await provisioned();
    const second = await provisioned();
    await admin.query(`alter role ${first.credentials[0]} createdb`);
    await admin.query(`alter role ${second.credentials[0]} createdb`);
    expect(await auditCustomerRoles(admin, first.name)).to.deep.equal([{ role: first.credentials[0], removed: ['createdb'] }]);
    expect(await attributes(second.credentials[0])).to.include({ rolcreatedb: true });
    expect(await auditCustomerRoles(admin, second.name)).to.deep.equal([{ role: second.credentials[0], removed: ['createdb'] }]);
  });
});

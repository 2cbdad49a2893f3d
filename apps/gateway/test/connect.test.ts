import { expect } from 'chai';
import type pg from 'pg';
import { eventually, rejection } from '@platform/testing';
import { connectVerified, psql, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

/** What node-postgres reports of a refused login: the ErrorResponse's fields. */
type PgError = Error & { code?: string; hint?: string; severity?: string };

async function loginError(p: GatewayPlatform, credential: TestCredential, overrides: Partial<pg.ClientConfig> = {}): Promise<PgError> {
  return rejection(connectVerified(p, credential, overrides)) as Promise<PgError>;
}

describe('gateway: connecting with a credential', function () {
  let p: GatewayPlatform;
  let db: TestDatabase;

  before(async function () {
    this.timeout(120_000);
    p = await startGatewayPlatform();
    db = await p.newDatabase();
  });

  after(async function () {
    this.timeout(90_000);
    await p?.stop();
  });

  it('gives dbHost as the gateway and the database’s own name', function () {
    expect(db.dbHost).to.equal(`postgres://localhost:${p.gatewayPort}/${db.name}`);
  });

  it('logs in over TLS verified against the development CA, as the credential, in the database', async function () {
    const credential = await db.newCredential();
    const client = await connectVerified(p, credential);
    try {
      const { rows } = await client.query('select current_user as who, ssl from pg_stat_ssl where pid = pg_backend_pid()');
      // The gateway's TLS ends at the gateway; the hop to the cluster is its own.
      expect(rows).to.deep.equal([{ who: credential.id, ssl: false }]);
      expect((client as unknown as { connection: { stream: { encrypted?: boolean } } }).connection.stream.encrypted).to.equal(true);
    } finally {
      await client.end();
    }
  });

  it('lets pg read and write, and another credential of the database use the table the first created', async function () {
    const [first, second] = [await db.newCredential(), await db.newCredential()];
    const a = await connectVerified(p, first);
    const b = await connectVerified(p, second);
    try {
      await a.query('create table notes (id int primary key, body text not null)');
      await a.query('insert into notes values ($1, $2), ($3, $4)', [1, 'one', 2, 'two']);
      expect((await b.query('select id, body from notes order by id')).rows).to.deep.equal([
        { id: 1, body: 'one' },
        { id: 2, body: 'two' },
      ]);
      const inserted = await b.query('insert into notes values (3, $1) returning id', ['three']);
      expect(inserted.rows).to.deep.equal([{ id: 3 }]);
      expect((await a.query('select count(*)::int as n, current_user as who from notes')).rows).to.deep.equal([{ n: 3, who: first.id }]);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('lets psql log in with sslmode=verify-full, read and write', async function () {
    const credential = await db.newCredential();
    const result = await psql(p, credential, [
      'create table psql_rows (n int)',
      'insert into psql_rows select generate_series(1, 5)',
      "select current_user, (select ssl from pg_stat_ssl where pid = pg_backend_pid()), sum(n) from psql_rows",
    ]);
    expect(result.stderr).to.equal('');
    expect(result.status).to.equal(0);
    expect(result.stdout).to.equal(`${credential.id}|f|15\n`);
  });

  it('lets psql log in with sslmode=require (TLS without verification), and refuses a wrong password with psql’s words', async function () {
    const credential = await db.newCredential();
    const ok = await psql(p, credential, ["select current_user || ' ' || (select count(*) from pg_stat_ssl where pid = pg_backend_pid())"], { sslmode: 'require' });
    expect(ok.stderr).to.equal('');
    expect(ok.stdout).to.equal(`${credential.id} 1\n`);
    const wrong = await psql(p, { ...credential, password: `${credential.password}x` }, ['select 1'], { sslmode: 'require' });
    expect(wrong.status).to.equal(2);
    expect(wrong.stderr).to.contain(`FATAL:  password authentication failed for user "${credential.id}"`);
  });

  it('refuses a wrong password with 28P01, as PostgreSQL words it', async function () {
    const credential = await db.newCredential();
    const error = await loginError(p, credential, { password: `${credential.password}x` });
    expect([error.code, error.severity, error.message]).to.deep.equal(['28P01', 'FATAL', `password authentication failed for user "${credential.id}"`]);
  });

  it('refuses another database’s name (even one that exists) with 3D000', async function () {
    const credential = await db.newCredential();
    const other = await p.newDatabase();
    for (const name of [other.name, 'postgres', 'no_such_database']) {
      const error = await loginError(p, credential, { database: name });
      expect([error.code, error.message]).to.deep.equal(['3D000', `database "${name}" does not exist`]);
    }
  });

  it('ends a deleted credential’s open session and refuses its logins with 28P01', async function () {
    const credential = await db.newCredential();
    const client = await connectVerified(p, credential);
    expect((await client.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
    const ended = new Promise<PgError>((resolve) => client.once('error', resolve));
    await db.deleteCredential(credential.id);
    const error = await ended;
    expect([error.code, error.message]).to.deep.equal(['57P01', 'terminating connection due to administrator command']);
    const refused = await loginError(p, credential);
    expect([refused.code, refused.message]).to.deep.equal(['28P01', `password authentication failed for user "${credential.id}"`]);
  });

  it('refuses names that are no credential with 28P01 and never relays them, not even the superuser with its own password', async function () {
    const credential = await db.newCredential();
    const names = [
      { user: p.superuser.user, password: p.superuser.password, database: 'postgres' },
      { user: p.superuser.user, password: p.superuser.password, database: db.name },
      { user: 'cred_aaaaaaaaaaaaaaaaaaaa', password: credential.password, database: db.name },
      { user: `${db.name}_owner`, password: credential.password, database: db.name },
      { user: 'no such user', password: 'x', database: db.name },
    ];
    for (const attempt of names) {
      const error = await loginError(p, credential, attempt);
      expect([error.code, error.message], attempt.user).to.deep.equal(['28P01', `password authentication failed for user "${attempt.user}"`]);
    }
  });

  it('refuses a plain connection with 28000 and a hint, when plain connections are not allowed', async function () {
    const credential = await db.newCredential();
    const error = await loginError(p, credential, { ssl: false });
    expect([error.code, error.severity, error.message]).to.deep.equal(['28000', 'FATAL', 'the gateway accepts TLS connections only']);
    expect(error.hint).to.equal('Connect with sslmode=require, or sslmode=verify-full and the platform’s certificate authority.');
    const viaPsql = await psql(p, credential, ['select 1'], { sslmode: 'disable' });
    expect(viaPsql.status).to.equal(2);
    expect(viaPsql.stderr).to.contain('FATAL:  the gateway accepts TLS connections only\nHINT:  Connect with sslmode=require');
  });

  it('refuses the credentials of a deleted database, and ends their sessions', async function () {
    const doomed = await p.newDatabase();
    const credential = await doomed.newCredential();
    const client = await connectVerified(p, credential);
    const ended = new Promise<PgError>((resolve) => client.once('error', resolve));
    await doomed.deleteDatabase();
    expect((await ended).code).to.equal('57P01');
    const error = await loginError(p, credential);
    expect([error.code, error.message]).to.deep.equal(['28P01', `password authentication failed for user "${credential.id}"`]);
  });

  it('routes each credential to its own database when two workspaces have a database of the same name', async function () {
    const name = `twin_${Date.now().toString(36)}`;
    const [left, right] = [await p.newDatabase(name), await p.newDatabase(name)];
    expect(left.slug).to.not.equal(right.slug);
    const a = await connectVerified(p, await left.newCredential());
    const b = await connectVerified(p, await right.newCredential());
    try {
      const [databaseA, databaseB] = [(await a.query('select current_database() as name')).rows[0].name, (await b.query('select current_database() as name')).rows[0].name];
      expect(databaseA).to.not.equal(databaseB);
      await a.query("create table side (which text); insert into side values ('left')");
      await b.query("create table side (which text); insert into side values ('right')");
      expect((await a.query('select which from side')).rows).to.deep.equal([{ which: 'left' }]);
      expect((await b.query('select which from side')).rows).to.deep.equal([{ which: 'right' }]);
      // The name a client gives is the shared one; the cluster sees two physical databases.
      const physical = await p.superuserQuery('postgres', 'select datname from pg_database where datname = any($1) order by datname', [[databaseA, databaseB]]);
      expect(physical.map((row) => row.datname)).to.deep.equal([databaseA, databaseB].sort());
    } finally {
      await a.end();
      await b.end();
    }
    await eventually(async () => ((await p.metrics()).get('gateway_connections') === 0 ? true : undefined), 5_000, 'connections to close');
  });
});

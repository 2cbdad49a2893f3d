import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { databaseUrl } from '@platform/config';
import { DeadlineExceededError, withDeadline } from '@platform/deadline';
import { UnavailableError, type Region } from '@platform/domain';
// Integration test: the driver runs against a real PostgreSQL, which @platform/testing starts.
import { databaseExists, freePort, query, rejection, startTestPostgres, withClient, type TestPostgres } from '@platform/testing';
import { BUILT_IN_SCHEMA_STEPS } from '@platform/data-plane';
import { PgClusterDirectory, PgClusterDriver } from './cluster-driver.js';

const REFUSED_NAMES = [
  'x; drop database postgres',
  'Upper',
  '1starts_with_digit',
  'has-dash',
  'has space',
  'quote"d',
  '',
  `a${'b'.repeat(56)}`,
];

const BUILT_IN_TABLES = ['public.tenants', 'users.users', 'users.tenant_users', 'auth.credentials', 'auth.sessions'];

describe('cluster driver', function () {
  let postgres: TestPostgres;

  before(async function () {
    postgres = await startTestPostgres();
  });

  after(async function () {
    await postgres?.stop();
  });

  describe('PgClusterDriver', function () {
    let driver: PgClusterDriver;
    const drivers: PgClusterDriver[] = [];
    const created: string[] = [];

    /** A physical name of this test only; dropped after it. */
    function physicalName(prefix = 't'): string {
      const name = `${prefix}_${randomBytes(6).toString('hex')}`;
      created.push(name);
      return name;
    }

    function newDriver(url = postgres.adminUrl): PgClusterDriver {
      const opened = new PgClusterDriver(url);
      drivers.push(opened);
      return opened;
    }

    const urlOf = (name: string) => databaseUrl(postgres.adminUrl, name);

    beforeEach(function () {
      driver = newDriver();
    });

    afterEach(async function () {
      await Promise.all(drivers.splice(0).map((opened) => opened.close()));
      const names = created.splice(0);
      await withClient(postgres.adminUrl, async (client) => {
        for (const name of names) await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`);
      });
    });

    describe('createDatabase', function () {
      it('creates the database, and a second call is fine', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        expect(await databaseExists(postgres.adminUrl, name)).to.equal(true);

        await query(urlOf(name), 'create table kept (id int)');
        await driver.createDatabase(name);
        await newDriver().createDatabase(name);
        expect(await query(urlOf(name), `select to_regclass('public.kept') is not null as kept`)).to.deep.equal([{ kept: true }]);
      });

      it('succeeds for every worker when several create the same database at once', async function () {
        // Repeated: the race between the existence check and CREATE DATABASE is not hit every time.
        for (let round = 0; round < 8; round++) {
          const name = physicalName('race');
          const workers = [newDriver(), newDriver(), newDriver(), newDriver()];
          await Promise.all(workers.map((worker) => worker.createDatabase(name)));
          expect(await databaseExists(postgres.adminUrl, name)).to.equal(true);
        }
      });
    });

    describe('installBuiltInSchema', function () {
      async function steps(name: string): Promise<number[]> {
        const rows = await query<{ version: number }>(urlOf(name), 'select version from platform.schema_steps order by version');
        return rows.map((row) => row.version);
      }

      async function tablesPresent(name: string): Promise<Record<string, boolean>> {
        const present: Record<string, boolean> = {};
        for (const table of BUILT_IN_TABLES) {
          const [row] = await query<{ found: boolean }>(urlOf(name), 'select to_regclass($1) is not null as found', [table]);
          present[table] = row.found;
        }
        return present;
      }

      it('installs every step once; a second install changes nothing', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        await driver.installBuiltInSchema(name);
        const expected = BUILT_IN_SCHEMA_STEPS.map((step) => step.version);
        expect(await steps(name)).to.deep.equal(expected);
        expect(await tablesPresent(name)).to.deep.equal(Object.fromEntries(BUILT_IN_TABLES.map((table) => [table, true])));

        await query(urlOf(name), `insert into public.tenants (name) values ('kept')`);
        await driver.installBuiltInSchema(name);
        expect(await steps(name)).to.deep.equal(expected);
        expect(await query(urlOf(name), 'select name from public.tenants')).to.deep.equal([{ name: 'kept' }]);
      });

      it('installs once when two workers install into the same database at once', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        await Promise.all([driver.installBuiltInSchema(name), newDriver().installBuiltInSchema(name)]);
        expect(await steps(name)).to.deep.equal(BUILT_IN_SCHEMA_STEPS.map((step) => step.version));
      });

      it('keeps the secrets schema out of reach of other roles', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        await driver.installBuiltInSchema(name);
        const rows = await query<{ schema: string; usable: boolean }>(
          urlOf(name),
          `select nspname as schema, has_schema_privilege('public', oid, 'USAGE') as usable
             from pg_namespace where nspname in ('auth', 'platform') order by nspname`,
        );
        expect(rows).to.deep.equal([
          { schema: 'auth', usable: false },
          { schema: 'platform', usable: false },
        ]);
      });

      it('leaves nothing behind when a step fails', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        // A table in the way makes step 1 fail halfway through.
        await query(urlOf(name), 'create schema users');
        const error = await rejection(driver.installBuiltInSchema(name));
        expect(error.message).to.match(/users/);
        expect(await query(urlOf(name), `select to_regclass('public.tenants') is null as rolled_back`)).to.deep.equal([{ rolled_back: true }]);
        expect(await query(urlOf(name), `select to_regclass('platform.schema_steps') is null as rolled_back`)).to.deep.equal([
          { rolled_back: true },
        ]);
      });
    });

    describe('verifyDatabase', function () {
      it('throws before the built-in schema is installed and passes after', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        expect((await rejection(driver.verifyDatabase(name))).message).to.include('schema_steps');

        await driver.installBuiltInSchema(name);
        await driver.verifyDatabase(name);
      });

      it('throws when the recorded schema is behind the current one', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        await driver.installBuiltInSchema(name);
        await query(urlOf(name), 'delete from platform.schema_steps');
        const error = await rejection(driver.verifyDatabase(name));
        expect(error.message).to.include(`database ${name} has built-in schema 0`);
      });

      it('throws for a database that does not exist', async function () {
        const name = physicalName();
        const error = await rejection(driver.verifyDatabase(name));
        expect(error.message).to.include(name);
      });
    });

    describe('dropDatabase', function () {
      it('drops the database, and dropping it again or one that never existed is fine', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        await driver.dropDatabase(name);
        expect(await databaseExists(postgres.adminUrl, name)).to.equal(false);
        await driver.dropDatabase(name);
        await driver.dropDatabase(physicalName());
      });

      it('ends the sessions still connected to the database', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        const client = new pg.Client({ connectionString: urlOf(name) });
        const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
        client.on('error', () => {});
        await client.connect();
        await client.query('select 1');

        await driver.dropDatabase(name);
        expect(await databaseExists(postgres.adminUrl, name)).to.equal(false);
        await ended;
        await rejection(client.query('select 1'));
        await client.end().catch(() => {});
      });

      it('inside a request, keeps to its deadline (it runs through pool.query), and outside one is not cut', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        const cut = await withDeadline(1, async () => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          return rejection(driver.dropDatabase(name));
        });
        expect(cut).to.be.instanceOf(DeadlineExceededError);
        expect(await databaseExists(postgres.adminUrl, name)).to.equal(true);
        await driver.dropDatabase(name);
        expect(await databaseExists(postgres.adminUrl, name)).to.equal(false);
      });
    });

    describe('listDatabases', function () {
      it('lists the databases whose names start with the prefix, in order', async function () {
        const prefix = `lst_${randomBytes(3).toString('hex')}_`;
        const names = [`${prefix}b`, `${prefix}a`, `${prefix}c`];
        created.push(...names);
        // `_` is not a wildcard: this one differs from the prefix only in its last character.
        const lookalike = `${prefix.slice(0, -1)}x`;
        created.push(lookalike);
        for (const name of [...names, lookalike]) await driver.createDatabase(name);

        expect(await driver.listDatabases(prefix)).to.deep.equal([...names].sort());
        expect(await driver.listDatabases(`${prefix}a`)).to.deep.equal([`${prefix}a`]);
        expect(await driver.listDatabases(`nothing_${randomBytes(3).toString('hex')}`)).to.deep.equal([]);

        await driver.dropDatabase(`${prefix}b`);
        expect(await driver.listDatabases(prefix)).to.deep.equal([`${prefix}a`, `${prefix}c`]);
      });
    });

    describe('physical names', function () {
      it('refuses a name that is not [a-z_][a-z0-9_]{0,55} (room for its role names) before any SQL', async function () {
        // Nothing listens on this port: a driver that tried SQL would fail to connect instead.
        const unreachable = newDriver(`postgres://postgres:secret@127.0.0.1:${await freePort()}/postgres`);
        for (const name of REFUSED_NAMES) {
          for (const attempt of [
            () => unreachable.createDatabase(name),
            () => unreachable.installBuiltInSchema(name),
            () => unreachable.verifyDatabase(name),
            () => unreachable.dropDatabase(name),
          ]) {
            const error = await rejection(attempt());
            expect(error.message, `${name}: ${error.message}`).to.equal(`refusing physical database name '${name}'`);
          }
        }
      });

      it('refuses them against a live server too, which keeps its databases', async function () {
        for (const name of REFUSED_NAMES) {
          await rejection(driver.createDatabase(name));
          await rejection(driver.dropDatabase(name));
        }
        expect(await databaseExists(postgres.adminUrl, 'postgres')).to.equal(true);
        expect(await databaseExists(postgres.adminUrl, 'Upper')).to.equal(false);
        expect(await databaseExists(postgres.adminUrl, 'x; drop database postgres')).to.equal(false);
      });

      it('accepts the longest valid name and the names the platform generates', async function () {
        const longest = `z${randomBytes(27).toString('hex')}_`;
        expect(longest).to.have.length(56);
        created.push(longest);
        await driver.createDatabase(longest);
        expect(await databaseExists(postgres.adminUrl, longest)).to.equal(true);

        const generated = `db_${randomBytes(16).toString('hex')}`;
        created.push(generated);
        await driver.createDatabase(generated);
        await driver.installBuiltInSchema(generated);
        await driver.verifyDatabase(generated);
      });
    });

    describe('connectionUrl', function () {
      it('reaches the database on the admin URL host, without credentials', async function () {
        const name = physicalName();
        await driver.createDatabase(name);
        const admin = new URL(postgres.adminUrl);
        const url = new URL(driver.connectionUrl(name));

        expect(url.protocol).to.equal('postgres:');
        expect(url.username).to.equal('');
        expect(url.password).to.equal('');
        expect(url.host).to.equal(admin.host);
        expect(url.pathname).to.equal(`/${name}`);
        expect(driver.connectionUrl(name)).not.to.include(decodeURIComponent(admin.password) || '\u0000');

        // With credentials added, it reaches that very database.
        url.username = admin.username;
        url.password = admin.password;
        expect(await query(url.toString(), 'select current_database() as name')).to.deep.equal([{ name }]);
      });
    });
  });

  describe('PgClusterDirectory', function () {
    const opened: PgClusterDirectory[] = [];

    afterEach(async function () {
      await Promise.all(opened.splice(0).map((directory) => directory.close()));
    });

    function directory(served: readonly Region[], urls: { us: string; eu: string; azure: string }) {
      const created = new PgClusterDirectory(served, { AWS_US_WEST_2: urls.us, AWS_EU_CENTRAL_1: urls.eu, AZURE_EASTUS: urls.azure });
      opened.push(created);
      return created;
    }

    it('lists the served regions', function () {
      const url = postgres.adminUrl;
      expect(directory(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1'], { us: url, eu: url, azure: url }).regions()).to.deep.equal([
        'AWS_US_WEST_2',
        'AWS_EU_CENTRAL_1',
      ]);
    });

    it('throws UnavailableError region_not_served for a region it does not serve', function () {
      const url = postgres.adminUrl;
      const clusters = directory(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1'], { us: url, eu: url, azure: url });
      let caught: unknown;
      try {
        clusters.forRegion('AZURE_EASTUS');
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(UnavailableError);
      expect(caught).to.include({ kind: 'unavailable', code: 'region_not_served' });
      expect((caught as Error).message).to.include('AZURE_EASTUS');
    });

    it('shares one driver between regions on the same cluster URL, and keeps others apart', async function () {
      const url = postgres.adminUrl;
      const other = databaseUrl(url, 'template1');
      const clusters = directory(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1', 'AZURE_EASTUS'], { us: url, eu: url, azure: other });

      const us = clusters.forRegion('AWS_US_WEST_2');
      expect(clusters.forRegion('AWS_EU_CENTRAL_1')).to.equal(us);
      expect(clusters.forRegion('AWS_US_WEST_2')).to.equal(us);
      expect(clusters.forRegion('AZURE_EASTUS')).not.to.equal(us);
      expect(us).to.be.instanceOf(PgClusterDriver);

      expect(await us.listDatabases('postgres')).to.deep.equal(['postgres']);
      expect(await clusters.forRegion('AZURE_EASTUS').listDatabases('template1')).to.deep.equal(['template1']);
    });

    it('close() closes its drivers, and a later forRegion opens a new one', async function () {
      const url = postgres.adminUrl;
      const clusters = directory(['AWS_US_WEST_2'], { us: url, eu: url, azure: url });
      const first = clusters.forRegion('AWS_US_WEST_2');
      expect(await first.listDatabases('postgres')).to.deep.equal(['postgres']);

      await clusters.close();
      await rejection(first.listDatabases('postgres'));
      const second = clusters.forRegion('AWS_US_WEST_2');
      expect(second).not.to.equal(first);
      expect(await second.listDatabases('postgres')).to.deep.equal(['postgres']);
    });
  });
});

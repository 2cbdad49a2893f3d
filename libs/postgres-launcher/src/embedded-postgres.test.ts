import { expect } from 'chai';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { severestLine, startEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded-postgres.js';
import pg from 'pg';
import { freePort, scratchDir } from './scratch.js';

async function query(url: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe('startEmbeddedPostgres', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  const running = new Set<EmbeddedPostgresHandle>();

  async function start(dir: string, port: number): Promise<EmbeddedPostgresHandle> {
    const handle = await startEmbeddedPostgres({ dir, port });
    running.add(handle);
    return handle;
  }

  async function stop(handle: EmbeddedPostgresHandle): Promise<void> {
    running.delete(handle);
    await handle.stop();
  }

  function dir(): string {
    const created = scratchDir('embedded-pg-test-');
    dirs.push(created);
    return created;
  }

  async function databases(handle: EmbeddedPostgresHandle, name: string): Promise<number> {
    const rows = await query(handle.url('postgres'), 'select datname from pg_database where datname = $1', [name]);
    return rows.length;
  }

  afterEach(async function () {
    for (const handle of [...running]) await stop(handle);
    for (const created of dirs.splice(0)) rmSync(created, { recursive: true, force: true });
  });

  it('starts a server reachable with the superuser URL it hands out', async function () {
    const port = await freePort();
    const folder = dir();
    const server = await start(folder, port);
    expect(server.port).to.equal(port);

    const url = new URL(server.url('postgres'));
    expect(url.hostname).to.equal('127.0.0.1');
    expect(url.port).to.equal(String(port));
    expect(url.username).to.equal('postgres');
    expect(decodeURIComponent(url.password)).to.equal(readFileSync(join(folder, 'password'), 'utf8').trim());

    const [row] = await query(server.url('postgres'), 'select current_user as who, rolsuper from pg_roles where rolname = current_user');
    expect(row).to.deep.equal({ who: 'postgres', rolsuper: true });
    expect(existsSync(join(folder, 'data', 'PG_VERSION'))).to.equal(true);
  });

  it('ensureDatabase creates a database once and is idempotent', async function () {
    const server = await start(dir(), await freePort());
    await server.ensureDatabase('app_data');
    await query(server.url('app_data'), 'create table marker (id int)');
    await query(server.url('app_data'), 'insert into marker values (1)');

    await server.ensureDatabase('app_data');
    expect(await databases(server, 'app_data')).to.equal(1);
    // A second call must not have recreated (emptied) it.
    expect(await query(server.url('app_data'), 'select id from marker')).to.deep.equal([{ id: 1 }]);
  });

  it('ensureDatabase quotes the name it is given', async function () {
    const server = await start(dir(), await freePort());
    const name = 'Mixed "Case" db';
    await server.ensureDatabase(name);
    await server.ensureDatabase(name);
    expect(await databases(server, name)).to.equal(1);
    expect(await query(server.url(name), 'select current_database() as name')).to.deep.equal([{ name }]);
  });

  it('reuses the data of an earlier run in the same folder', async function () {
    const folder = dir();
    const port = await freePort();
    const first = await start(folder, port);
    await first.ensureDatabase('kept');
    await query(first.url('kept'), 'create table survivors (name text)');
    await query(first.url('kept'), `insert into survivors values ('before restart')`);
    const password = readFileSync(join(folder, 'password'), 'utf8');
    await stop(first);

    const second = await start(folder, port);
    expect(readFileSync(join(folder, 'password'), 'utf8')).to.equal(password);
    expect(second.url('kept')).to.equal(first.url('kept'));
    expect(await query(second.url('kept'), 'select name from survivors')).to.deep.equal([{ name: 'before restart' }]);
  });

  it('leaves alone a data/ it did not create that holds files but no cluster, and says so', async function () {
    const folder = dir();
    mkdirSync(join(folder, 'data'));
    writeFileSync(join(folder, 'data', 'notes.txt'), 'mine');
    let caught: unknown;
    try {
      await start(folder, await freePort());
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).message).to.equal(
      `${join(folder, 'data')} is not empty and holds no PostgreSQL cluster (no PG_VERSION), and this launcher did not create it: move it away or choose another folder`,
    );
    expect(readdirSync(join(folder, 'data'))).to.deep.equal(['notes.txt']);
  });

  it('starts over an initialisation of its own that did not finish', async function () {
    const folder = dir();
    // What a start killed during initdb leaves: its marker, and a data/ with PG_VERSION already written.
    mkdirSync(join(folder, 'data'));
    writeFileSync(join(folder, 'data', 'PG_VERSION'), '16\n');
    writeFileSync(join(folder, 'initdb-in-progress'), '1\n');
    const server = await start(folder, await freePort());
    expect(await query(server.url('postgres'), 'select 1 as ok')).to.deep.equal([{ ok: 1 }]);
    expect(existsSync(join(folder, 'initdb-in-progress'))).to.equal(false);
  });

  it('a second server on a taken port fails with an Error that names the port', async function () {
    const port = await freePort();
    const first = await start(dir(), port);

    let caught: unknown;
    try {
      await start(dir(), port);
    } catch (error) {
      caught = error;
    }
    expect(caught).to.be.instanceOf(Error);
    expect((caught as Error).message).to.match(new RegExp(`^PostgreSQL did not start on port ${port}: FATAL: could not create any TCP/IP sockets`));

    // The first server is unaffected.
    expect(await query(first.url('postgres'), 'select 1 as ok')).to.deep.equal([{ ok: 1 }]);
  });

  it('a server that cannot start says why in its own words (a data folder others may write)', async function () {
    const folder = dir();
    const port = await freePort();
    await stop(await start(folder, port));
    chmodSync(join(folder, 'data'), 0o777);
    let caught: unknown;
    try {
      await start(folder, port);
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).message).to.equal(
      `PostgreSQL did not start on port ${port}: FATAL: data directory "${join(folder, 'data')}" has invalid permissions (Permissions should be u=rwx (0700) or u=rwx,g=rx (0750).)`,
    );
  });

  it('names why a running server ended: its last PANIC, else its last FATAL that is not one session’s', async function () {
    const server = await start(dir(), await freePort());
    expect(server.exitCause(), 'running').to.equal(null);
    process.kill(server.pid, 'SIGQUIT');
    await server.exited;
    running.delete(server);
    // An immediate shutdown names no failure.
    expect(server.exitCause()).to.equal(null);
    expect(
      severestLine([
        '2026-11-26 03:00:00.000 UTC [10] FATAL:  terminating connection due to administrator command',
        '2026-11-26 03:00:00.001 UTC [11] PANIC:  could not write to file "pg_wal/xlogtemp.11": No space left on device',
        '2026-11-26 03:00:00.002 UTC [12] FATAL:  could not write init file',
        '2026-11-26 03:00:00.003 UTC [1] LOG:  database system is shut down',
      ]),
    ).to.equal('PANIC: could not write to file "pg_wal/xlogtemp.11": No space left on device');
    expect(severestLine(['x FATAL:  password authentication failed for user "a"', 'y FATAL:  could not open file "global/pg_filenode.map": Permission denied', 'z DETAIL:  more'])).to.equal(
      'FATAL: could not open file "global/pg_filenode.map": Permission denied (more)',
    );
    expect(severestLine(['x FATAL:  the database system is shutting down', 'y LOG:  database system is shut down'])).to.equal(null);
  });
});

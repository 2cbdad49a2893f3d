import { expect } from 'chai';
import { once } from 'node:events';
import { chmodSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { developerWithWorkspace, expectApiError } from '@platform/test-fixtures';
import { eventually, query, withClient } from '@platform/testing';
import { physicalNameOf, platform, type TestPlatform } from './support/platform.js';
import { createTenant, createUser, developerWithReadyDatabase } from './support/fixtures.js';

const SMALL = { id: 'ct_small', computeSize: 'small', memory: '1 GiB', hourlyCost: 0.06 };
const MEDIUM = { id: 'ct_medium', computeSize: 'medium', memory: '2 GiB', hourlyCost: 0.12 };
const LARGE = { id: 'ct_large', computeSize: 'large', memory: '4 GiB', hourlyCost: 0.24 };

interface Instance {
  instanceId: string;
  instanceName: string;
  status: string;
  instanceType: typeof SMALL;
  desiredInstanceType: typeof SMALL;
  database: Record<string, unknown>;
  created: string;
  updated: string;
  deleted?: string;
  failure?: string | null;
  health?: { status: 'ok' | 'down'; reason: string | null; since: string } | null;
}

/** A credential's URL without sslmode (the test gateway allows plain connections). */
function plain(url: string): string {
  const parsed = new URL(url);
  parsed.searchParams.delete('sslmode');
  return parsed.href;
}

function withCredential<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  return withClient(plain(url), fn);
}

/** A CancelRequest to the gateway, as a driver sends it on a connection of its own. */
async function sendCancel(gatewayUrl: string, processId: number, secretKey: number): Promise<void> {
  const { hostname, port } = new URL(gatewayUrl);
  const socket = net.connect({ host: hostname, port: Number(port) });
  await once(socket, 'connect');
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(80877102, 4);
  packet.writeInt32BE(processId, 8);
  packet.writeInt32BE(secretKey, 12);
  socket.end(packet);
  await once(socket, 'close');
}

describe('dedicated compute', function () {
  // Moving a database starts a PostgreSQL server and copies the database: seconds, not milliseconds.
  this.timeout(120_000);
  let p: TestPlatform;
  let owner: Awaited<ReturnType<typeof developerWithReadyDatabase>>;
  let credentialUrl: string;
  let clusterPort: number;

  before(async function () {
    p = await platform();
    owner = await developerWithReadyDatabase(p);
    const created = await p.request('POST', `${owner.D}/credentials`, { token: owner.token });
    expect(created.status, created.text).to.equal(201);
    credentialUrl = created.body.connectionUrl;
    clusterPort = Number(new URL(p.postgres.adminUrl).port);
  });

  async function instance(id: string, D = owner.D): Promise<Instance> {
    const response = await p.request('GET', `${D}/compute/${id}`, { token: owner.token });
    expect(response.status, response.text).to.equal(200);
    return response.body;
  }

  /** Polls the instance until its status is `status` (and its type `typeId`), recording every status seen on the way. */
  async function until(id: string, status: string, seen: string[] = [], typeId?: string): Promise<Instance> {
    return eventually(
      async () => {
        const current = await instance(id);
        if (seen[seen.length - 1] !== current.status) seen.push(current.status);
        if (current.status === 'FAILED' && status !== 'FAILED') throw new Error(`instance FAILED: ${current.failure}`);
        return current.status === status && (typeId === undefined || current.instanceType.id === typeId) ? current : undefined;
      },
      90_000,
      `instance ${id} ${status}`,
    );
  }

  async function serverPort(): Promise<number> {
    return withCredential(credentialUrl, async (client) => Number((await client.query('show port')).rows[0].port));
  }

  describe('GET W/compute-types', function () {
    it('lists the catalog with id, computeSize, memory and hourlyCost', async function () {
      const response = await p.request('GET', `/workspaces/${owner.slug}/compute-types`, { token: owner.token });
      expect(response.status, response.text).to.equal(200);
      expect(response.body).to.deep.equal([SMALL, MEDIUM, LARGE]);
    });

    it('answers 404 for a workspace the caller does not belong to, and 403 to a user token', async function () {
      const other = await developerWithWorkspace(p);
      expectApiError(await p.request('GET', `/workspaces/${owner.slug}/compute-types`, { token: other.token }), 404, 'workspace_not_found');
      const tenant = await createTenant(p, owner.token, owner.D);
      const user = await createUser(p, owner.token, `${owner.D}/tenants/${tenant.id}`);
      expectApiError(await p.request('GET', `/workspaces/${owner.slug}/compute-types`, { token: user.jwt }), 403, 'developer_token_required');
      expectApiError(await p.request('GET', `${owner.D}/compute`, { token: user.jwt }), 403, 'developer_token_required');
      expectApiError(
        await p.request('POST', `${owner.D}/compute`, { token: user.jwt, json: { instanceName: 'x', instanceSize: 'small' } }),
        403,
        'developer_token_required',
      );
    });
  });

  describe('bad input', function () {
    it('refuses a missing, unknown or malformed field with 400 and creates nothing', async function () {
      const D = owner.D;
      const cases: [unknown, string][] = [
        [{}, 'validation_failed'],
        [{ instanceName: 'a' }, 'validation_failed'],
        [{ instanceName: 'a', instanceSize: 'huge' }, 'unknown_instance_size'],
        [{ instanceName: ' leading space', instanceSize: 'small' }, 'invalid_instance_name'],
        [{ instanceName: 'x'.repeat(64), instanceSize: 'small' }, 'validation_failed'],
        [{ instanceName: 'a', instanceSize: 'small', extra: 1 }, 'validation_failed'],
        [{ instanceName: 7, instanceSize: 'small' }, 'validation_failed'],
      ];
      for (const [json, code] of cases) {
        expectApiError(await p.request('POST', `${D}/compute`, { token: owner.token, json }), 400, code);
      }
      const listed = await p.request('GET', `${D}/compute`, { token: owner.token });
      expect(listed.body).to.deep.equal([]);
    });

    it('validates the list window: date-times with an offset, start not after end', async function () {
      expectApiError(await p.request('GET', `${owner.D}/compute?start=yesterday`, { token: owner.token }), 400, 'invalid_window');
      expectApiError(await p.request('GET', `${owner.D}/compute?end=2026-11-22T12:00:00`, { token: owner.token }), 400, 'invalid_window');
      expectApiError(
        await p.request('GET', `${owner.D}/compute?start=2026-11-22T12:00:00Z&end=2026-11-22T11:00:00Z`, { token: owner.token }),
        400,
        'invalid_window',
      );
    });

    it('answers 404 for another workspace’s database and an unknown instance', async function () {
      const other = await developerWithWorkspace(p);
      expectApiError(await p.request('GET', `${owner.D}/compute`, { token: other.token }), 404, 'workspace_not_found');
      expectApiError(
        await p.request('POST', `${owner.D}/compute`, { token: other.token, json: { instanceName: 'x', instanceSize: 'small' } }),
        404,
        'workspace_not_found',
      );
      const unknown = '00000000-0000-4000-8000-000000000000';
      expectApiError(await p.request('GET', `${owner.D}/compute/${unknown}`, { token: owner.token }), 404, 'compute_instance_not_found');
      expectApiError(await p.request('PUT', `${owner.D}/compute/${unknown}`, { token: owner.token, json: { instanceName: 'y' } }), 404, 'compute_instance_not_found');
      expectApiError(await p.request('DELETE', `${owner.D}/compute/${unknown}`, { token: owner.token }), 404, 'compute_instance_not_found');
      expectApiError(await p.request('GET', `${owner.D}/compute/not-a-uuid`, { token: owner.token }), 400, 'validation_failed');
    });
  });

  describe('the gateway during a move', function () {
    it('holds a login while its database is moving, and lets it through when the move ends; credentials wait too', async function () {
      await query(p.controlPlane.url, 'update databases set moving_since = now() where id = $1', [owner.database.id]);
      let connected = false;
      const login = withCredential(credentialUrl, async (client) => {
        connected = true;
        return Number((await client.query('select 1 as one')).rows[0].one);
      });
      try {
        await new Promise((resolve) => setTimeout(resolve, 600));
        expect(connected).to.equal(false);
        // Credentials are roles, copied with the database: none is made or dropped meanwhile.
        const refused = await p.request('POST', `${owner.D}/credentials`, { token: owner.token });
        expectApiError(refused, 503, 'database_moving');
        expect(refused.headers.get('retry-after')).to.equal('2');
      } finally {
        await query(p.controlPlane.url, 'update databases set moving_since = null where id = $1', [owner.database.id]);
      }
      expect(await login).to.equal(1);
    });
  });

  describe('moving back soon after moving', function () {
    it('leaves no role on the cluster of a credential deleted while the database was away', async function () {
      const quick = await developerWithReadyDatabase(p);
      const made = await p.request('POST', `${quick.D}/credentials`, { token: quick.token });
      expect(made.status, made.text).to.equal(201);
      const role = made.body.id as string;
      const created = await p.request('POST', `${quick.D}/compute`, { token: quick.token, json: { instanceName: 'brief', instanceSize: 'small' } });
      const path = `${quick.D}/compute/${created.body.instanceId}`;
      await eventually(async () => ((await p.request('GET', path, { token: quick.token })).body.status === 'READY' ? true : undefined), 90_000, 'READY');
      // Within the old copy's grace period, which still holds the role on the cluster.
      expect((await p.request('DELETE', `${quick.D}/credentials/${role}`, { token: quick.token })).status).to.equal(204);
      expect((await p.request('DELETE', path, { token: quick.token })).status).to.equal(200);
      await eventually(async () => ((await p.request('GET', path, { token: quick.token })).body.status === 'TERMINATED' ? true : undefined), 90_000, 'TERMINATED');
      expect(await query(p.postgres.adminUrl, 'select 1 from pg_roles where rolname = $1', [role])).to.deep.equal([]);
    });
  });

  describe('deleting a database', function () {
    it('keeps its instance while the database can be restored, brings it back there, and terminates it on purge', async function () {
      const doomed = await developerWithReadyDatabase(p);
      const credential = await p.request('POST', `${doomed.D}/credentials`, { token: doomed.token });
      expect(credential.status, credential.text).to.equal(201);
      const created = await p.request('POST', `${doomed.D}/compute`, { token: doomed.token, json: { instanceName: 'doomed', instanceSize: 'small' } });
      expect(created.status, created.text).to.equal(201);
      const instanceId = created.body.instanceId;
      await eventually(async () => ((await p.request('GET', `${doomed.D}/compute/${instanceId}`, { token: doomed.token })).body.status === 'READY' ? true : undefined), 90_000, 'READY');
      await withCredential(credential.body.connectionUrl, (client) => client.query(`create table kept (note text); insert into kept values ('on the instance')`));
      const status = async () => (await query<{ status: string }>(p.controlPlane.url, 'select status from compute_instances where id = $1', [instanceId]))[0].status;

      expect((await p.request('DELETE', doomed.D, { token: doomed.token })).status).to.equal(200);
      expectApiError(await p.request('GET', `${doomed.D}/compute/${instanceId}`, { token: doomed.token }), 404, 'database_not_found');
      // Closed where it lives, its instance's server; the instance stays as it was for a while.
      expect(await query(p.controlPlane.url, 'select closed is not null as closed from databases where id = $1', [doomed.database.id])).to.deep.equal([{ closed: true }]);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await status()).to.equal('READY');
      expect(existsSync(join(p.env.COMPUTE_DIR, instanceId))).to.equal(true);

      const restored = await p.request('POST', `/workspaces/${doomed.slug}/databases/${doomed.database.id}/restore`, { token: doomed.token });
      expect(restored.status, restored.text).to.equal(200);
      expect(restored.body.expandable).to.equal(false);
      await withCredential(credential.body.connectionUrl, async (client) => {
        expect((await client.query('select note from kept')).rows).to.deep.equal([{ note: 'on the instance' }]);
        expect(Number((await client.query('show port')).rows[0].port)).not.to.equal(clusterPort);
      });
      expect((await p.request('GET', `${doomed.D}/compute/${instanceId}`, { token: doomed.token })).body.status).to.equal('READY');

      // Deleted again and purged: the instance goes with it, its server stopped and its files removed.
      expect((await p.request('DELETE', doomed.D, { token: doomed.token })).status).to.equal(200);
      expect((await p.request('POST', `/workspaces/${doomed.slug}/databases/${doomed.database.id}/purge`, { token: doomed.token })).status).to.equal(204);
      await eventually(async () => ((await status()) === 'TERMINATED' ? true : undefined), 60_000, 'TERMINATED');
      expect(existsSync(join(p.env.COMPUTE_DIR, instanceId))).to.equal(false);
      expect(await query(p.postgres.adminUrl, 'select 1 from pg_roles where rolname = $1', [credential.body.id])).to.deep.equal([]);
    });
  });

  describe('a server that stops and does not start', function () {
    it('is reported through the API as down, with the cause in the server’s words, and ok again once it starts', async function () {
      const other = await developerWithReadyDatabase(p);
      const created = await p.request('POST', `${other.D}/compute`, { token: other.token, json: { instanceName: 'fragile', instanceSize: 'small' } });
      expect(created.status, created.text).to.equal(201);
      expect(created.body.health).to.equal(null);
      const id: string = created.body.instanceId;
      const read = async (): Promise<Instance> => {
        const response = await p.request('GET', `${other.D}/compute/${id}`, { token: other.token });
        expect(response.status, response.text).to.equal(200);
        return response.body;
      };
      const ready = await eventually(async () => {
        const current = await read();
        if (current.status === 'FAILED') throw new Error(`instance FAILED: ${current.failure}`);
        return current.status === 'READY' ? current : undefined;
      }, 90_000, 'READY');
      expect(ready.health).to.deep.include({ status: 'ok', reason: null });

      // A data folder others may write is one PostgreSQL refuses to start in: a fault the test can
      // make and undo, like a full disk but without filling one. Then the server stops.
      const data = join(p.env.COMPUTE_DIR, id, 'data');
      chmodSync(data, 0o777);
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postmaster, 'SIGINT');
      const down = await eventually(async () => {
        const current = await read();
        return current.health?.status === 'down' ? current : undefined;
      }, 30_000, 'health down');
      expect(down.status, 'still READY: the platform keeps trying').to.equal('READY');
      expect(down.failure).to.equal(null);
      expect(down.health!.reason).to.match(
        /^PostgreSQL did not start on port \d+: FATAL: data directory "data" has invalid permissions \(Permissions should be u=rwx \(0700\) or u=rwx,g=rx \(0750\)\.\)$/,
      );
      expect(Date.parse(down.health!.since)).to.be.greaterThan(Date.parse(ready.health!.since));

      chmodSync(data, 0o700);
      const back = await eventually(async () => {
        const current = await read();
        return current.health?.status === 'ok' ? current : undefined;
      }, 30_000, 'health ok again');
      expect(back.health!.reason).to.equal('started again after it stopped');
      expect(Date.parse(back.health!.since)).to.be.greaterThan(Date.parse(down.health!.since));

      expect((await p.request('DELETE', `${other.D}/compute/${id}`, { token: other.token })).status).to.equal(200);
      const gone = await eventually(async () => {
        const current = await read();
        return current.status === 'TERMINATED' ? current : undefined;
      }, 60_000, 'TERMINATED');
      expect(gone.health).to.equal(null);
    });
  });

  describe('an instance’s life', function () {
    let id: string;
    let laterCredentialUrl: string;
    const table = 'compute_notes';

    it('moves the database onto its own server at READY, with every row, and serves it there', async function () {
      await withCredential(credentialUrl, async (client) => {
        await client.query(`create table ${table} (id serial primary key, body text not null)`);
        await client.query(`insert into ${table} (body) values ('before 1'), ('before 2')`);
        // Extensions a credential created (a dump gives them no owner), one in a schema of its own, in use by a table.
        await client.query('create extension pg_trgm');
        await client.query('create schema words');
        await client.query('create extension citext schema words');
        await client.query('create table words.list (id serial primary key, word words.citext not null)');
        await client.query('create index on words.list using gin ((word::text) gin_trgm_ops)');
        await client.query(`insert into words.list (word) values ('Hello'), ('World')`);
      });
      const tenant = await createTenant(p, owner.token, owner.D, { name: 'Before the move' });
      expect((await p.request('GET', owner.D, { token: owner.token })).body.expandable).to.equal(true);

      const created = await p.request('POST', `${owner.D}/compute`, { token: owner.token, json: { instanceName: 'primary', instanceSize: 'small' } });
      expect(created.status, created.text).to.equal(201);
      const body: Instance = created.body;
      id = body.instanceId;
      expect(body).to.include({ instanceName: 'primary', status: 'PENDING' });
      expect(body.instanceType).to.deep.equal(SMALL);
      expect(body.desiredInstanceType).to.deep.equal(SMALL);
      expect(body.database).to.include({ id: owner.database.id, name: owner.databaseName, expandable: false, sharded: false });
      expectApiError(
        await p.request('POST', `${owner.D}/compute`, { token: owner.token, json: { instanceName: 'second', instanceSize: 'small' } }),
        409,
        'compute_instance_exists',
      );

      const seen: string[] = [];
      await until(id, 'READY', seen);
      expect(seen[seen.length - 1]).to.equal('READY');
      expect(seen.filter((status) => !['PENDING', 'PROVISIONING', 'READY'].includes(status))).to.deep.equal([]);

      // The gateway routes the credential to the instance's server, which runs with the small type's settings.
      const port = await serverPort();
      expect(port).not.to.equal(clusterPort);
      await withCredential(credentialUrl, async (client) => {
        expect((await client.query('show shared_buffers')).rows[0].shared_buffers).to.equal('256MB');
        expect((await client.query('show max_connections')).rows[0].max_connections).to.equal('100');
        expect((await client.query(`select body from ${table} order by id`)).rows).to.deep.equal([{ body: 'before 1' }, { body: 'before 2' }]);
        await client.query(`insert into ${table} (body) values ('on the instance')`);
        await client.query('set search_path = public, words');
        expect((await client.query(`select word::text from words.list where word = 'HELLO' and word::text % 'hello'`)).rows).to.deep.equal([{ word: 'Hello' }]);
        // They moved as the database's owner role's, so the move's own login took neither with it.
        const owners = await client.query(`select extname, extowner::regrole::text as owner from pg_extension where extname in ('citext', 'pg_trgm') order by 1`);
        expect(owners.rows.map((row) => `${row.extname} ${row.owner.replace(/^.*_/, '_')}`)).to.deep.equal(['citext _owner', 'pg_trgm _owner']);
      });
      // Cancel requests reach the instance's server: the client has its backend's own pid there, and
      // the gateway that holds the session knows the server of its (3.0) key.
      await withCredential(credentialUrl, async (client) => {
        const keyed = client as unknown as { processID: number; secretKey: number };
        expect((await client.query('select pg_backend_pid() as pid')).rows).to.deep.equal([{ pid: keyed.processID }]);
        const sleeping = client.query('select pg_sleep(30)').then(
          () => 'finished',
          (error: { code?: string }) => error.code,
        );
        // PostgreSQL ignores a cancel that comes before the statement runs: wait until it does.
        await withCredential(credentialUrl, (watcher) =>
          eventually(async () => {
            const { rowCount } = await watcher.query("select 1 from pg_stat_activity where state = 'active' and query = 'select pg_sleep(30)'");
            return rowCount === 1 ? true : undefined;
          }, 10_000, 'the sleep to run on the instance'),
        );
        await sendCancel(credentialUrl, keyed.processID, keyed.secretKey);
        expect(await sleeping).to.equal('57014');
      });
      // Query insights sample the instance's server: its statements are counted, and the source says where it runs.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      const windowStart = new Date(Math.floor(Date.now() / 60_000) * 60_000);
      await withCredential(credentialUrl, async (client) => {
        for (let i = 0; i < 40; i++) await client.query(`select ${i} as n`);
      });
      const insights = `/workspaces/${owner.slug}/databases/${owner.database.id}/insights/query-performance`;
      const end = new Date(windowStart.getTime() + 3_600_000).toISOString();
      const observed = await eventually(async () => {
        const answer = await p.request('GET', `${insights}?${new URLSearchParams({ start: windowStart.toISOString(), end, granularity: '1h' })}`, { token: owner.token });
        expect(answer.status, answer.text).to.equal(200);
        return (answer.body.points[0].observerQueriesPerSecond ?? 0) * 3600 >= 40 ? answer.body : undefined;
      }, 15_000, 'the instance’s statements in the insights');
      expect(observed.source).to.equal('dedicated');
      // The API's data plane reaches the database there too: tenants before and after the move.
      const after = await createTenant(p, owner.token, owner.D, { name: 'After the move' });
      const tenants = await p.request('GET', `${owner.D}/tenants`, { token: owner.token });
      expect(tenants.body.map((t: { id: string }) => t.id)).to.include.members([tenant.id, after.id]);
      // The instance's folder holds its cluster; the shared cluster's copy is dropped after the grace period.
      expect(readdirSync(p.env.COMPUTE_DIR)).to.include(id);
      const physical = await physicalNameOf(p, owner.database.id);
      await eventually(async () => {
        const rows = await query(p.postgres.adminUrl, 'select 1 from pg_database where datname = $1', [physical]);
        return rows.length === 0 ? true : undefined;
      }, 30_000, 'the shared cluster’s copy dropped');
    });

    it('resizes: RESIZING, then READY with the new type’s settings and every row', async function () {
      const changed = await p.request('PUT', `${owner.D}/compute/${id}`, { token: owner.token, json: { instanceSize: 'ct_medium', instanceName: 'bigger' } });
      expect(changed.status, changed.text).to.equal(200);
      expect(changed.body.instanceName).to.equal('bigger');
      expect(changed.body.desiredInstanceType).to.deep.equal(MEDIUM);
      const seen: string[] = [changed.body.status];
      const ready = await until(id, 'READY', seen, 'ct_medium');
      expect(seen).to.include('RESIZING');
      expect(ready.instanceType).to.deep.equal(MEDIUM);
      expect(ready.desiredInstanceType).to.deep.equal(MEDIUM);
      await withCredential(credentialUrl, async (client) => {
        expect((await client.query('show shared_buffers')).rows[0].shared_buffers).to.equal('512MB');
        expect((await client.query('show max_connections')).rows[0].max_connections).to.equal('200');
        expect((await client.query(`select body from ${table} order by id`)).rows.map((row) => row.body)).to.deep.equal(['before 1', 'before 2', 'on the instance']);
        await client.query(`insert into ${table} (body) values ('after the resize')`);
      });
      // A credential made while the database is on its instance is a role there, and moves back with it.
      const made = await p.request('POST', `${owner.D}/credentials`, { token: owner.token });
      expect(made.status, made.text).to.equal(201);
      laterCredentialUrl = made.body.connectionUrl;
      await withCredential(laterCredentialUrl, async (client) => {
        expect(Number((await client.query('show port')).rows[0].port)).not.to.equal(clusterPort);
      });
    });

    it('deletes: the database goes back to the shared cluster with every row, the server and its files go', async function () {
      const deleting = await p.request('DELETE', `${owner.D}/compute/${id}`, { token: owner.token });
      expect(deleting.status, deleting.text).to.equal(200);
      expect(['DELETING', 'TERMINATED']).to.include(deleting.body.status);
      expectApiError(await p.request('PUT', `${owner.D}/compute/${id}`, { token: owner.token, json: { instanceName: 'late' } }), 409, 'compute_instance_not_changeable');
      const terminated = await until(id, 'TERMINATED');
      expect(terminated.deleted).to.be.a('string');
      expect(await serverPort()).to.equal(clusterPort);
      await withCredential(credentialUrl, async (client) => {
        expect((await client.query(`select body from ${table} order by id`)).rows.map((row) => row.body)).to.deep.equal([
          'before 1',
          'before 2',
          'on the instance',
          'after the resize',
        ]);
      });
      expect(existsSync(join(p.env.COMPUTE_DIR, id))).to.equal(false);
      await withCredential(laterCredentialUrl, async (client) => {
        expect(Number((await client.query(`select count(*) from ${table}`)).rows[0].count)).to.equal(4);
      });
      const again = await p.request('DELETE', `${owner.D}/compute/${id}`, { token: owner.token });
      expect(again.status).to.equal(200);
      expect(again.body.status).to.equal('TERMINATED');
      expect((await p.request('GET', owner.D, { token: owner.token })).body.expandable).to.equal(true);
    });

    it('refuses bad changes with 400, and answers another database’s instance as not found', async function () {
      const path = `${owner.D}/compute/${id}`;
      for (const [json, code] of [
        [{ instanceSize: 'huge' }, 'unknown_instance_size'],
        [{ instanceName: '' }, 'validation_failed'],
        [{ instanceName: '.dot' }, 'invalid_instance_name'],
        [{ instanceSize: 3 }, 'validation_failed'],
        [{ size: 'small' }, 'validation_failed'],
      ] as const) {
        expectApiError(await p.request('PUT', path, { token: owner.token, json }), 400, code);
      }
      expect((await instance(id)).instanceName).to.equal('bigger');
      const stranger = await developerWithReadyDatabase(p);
      expectApiError(await p.request('GET', `${stranger.D}/compute/${id}`, { token: stranger.token }), 404, 'compute_instance_not_found');
      expectApiError(await p.request('PUT', `${stranger.D}/compute/${id}`, { token: stranger.token, json: { instanceName: 'mine' } }), 404, 'compute_instance_not_found');
      expectApiError(await p.request('DELETE', `${stranger.D}/compute/${id}`, { token: stranger.token }), 404, 'compute_instance_not_found');
      expectApiError(await p.request('GET', path, { token: stranger.token }), 404, 'workspace_not_found');
    });

    it('lists instances alive in a window, TERMINATED ones included', async function () {
      const all = await p.request('GET', `${owner.D}/compute`, { token: owner.token });
      expect(all.status).to.equal(200);
      expect(all.body.map((i: Instance) => [i.instanceId, i.status])).to.deep.equal([[id, 'TERMINATED']]);
      const later = new Date(Date.now() + 60_000).toISOString();
      const none = await p.request('GET', `${owner.D}/compute?start=${encodeURIComponent(later)}`, { token: owner.token });
      expect(none.body).to.deep.equal([]);
      const before = await p.request('GET', `${owner.D}/compute?end=2020-01-01T00:00:00Z`, { token: owner.token });
      expect(before.body).to.deep.equal([]);
      const around = await p.request('GET', `${owner.D}/compute?start=2020-01-01T00:00:00Z&end=${encodeURIComponent(later)}`, { token: owner.token });
      expect(around.body).to.have.length(1);
    });
  });
});

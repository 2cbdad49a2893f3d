import { expect } from 'chai';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { userInfo } from 'node:os';
import pg from 'pg';
import { reachableBinaries } from './binaries.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded-postgres.js';
import { freePort, scratchDir } from './scratch.js';
import { ensureServerAccount, type ServerAccount } from './server-account.js';

async function installedPackage(): Promise<{ folder: string; version: string }> {
  const installed = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  const folder = dirname(dirname(dirname(installed.postgres)));
  return { folder, version: (JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { version: string }).version };
}

// As root the server runs as the `postgres` user. A clone in a home folder of mode 700 holds
// binaries and data that user cannot reach; this is that clone, in miniature.
describe('startEmbeddedPostgres as root, from a folder the postgres user cannot enter', function () {
  this.timeout(60_000);
  let scratch: string;
  let privateDir: string;
  let server: EmbeddedPostgresHandle | undefined;

  before(function () {
    // Only root hands the binaries to the postgres user; as another user there is nothing to test.
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

  it('runs a copy of the binaries made under the cache folder, keyed by the package version, started from a working folder it cannot enter', async function () {
    // The installed package, seen through the private folder as a clone there would see it.
    const { folder: packageFolder, version } = await installedPackage();
    symlinkSync(packageFolder, join(privateDir, 'package'));
    const cache = join(scratch, 'cache');
    mkdirSync(cache);

    // As `npm start` is run: from inside the clone, which the server's account cannot enter.
    const workingFolder = process.cwd();
    process.chdir(privateDir);
    try {
      server = await startEmbeddedPostgres({ dir: join(scratch, 'data'), port: await freePort(), nativeDir: join(privateDir, 'package', 'native'), binaryCacheDir: cache });
    } finally {
      process.chdir(workingFolder);
    }

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

describe('the copy of the binaries made for a server account that cannot reach them', function () {
  this.timeout(60_000);
  let scratch: string;
  let cache: string;
  let nativeDir: string;
  let copy: string;
  let account: ServerAccount;

  before(function () {
    // Only root hands the binaries to the postgres user; as another user there is nothing to test.
    if (userInfo().uid !== 0) this.skip();
    account = ensureServerAccount()!;
  });

  beforeEach(async function () {
    scratch = scratchDir('embedded-pg-copy-');
    const privateDir = join(scratch, 'home');
    mkdirSync(privateDir, { mode: 0o700 });
    chmodSync(privateDir, 0o700);
    const { folder, version } = await installedPackage();
    symlinkSync(folder, join(privateDir, 'package'));
    nativeDir = join(privateDir, 'package', 'native');
    cache = join(scratch, 'cache');
    mkdirSync(cache);
    copy = join(cache, `embedded-postgres-${process.platform}-${process.arch}-${version}`);
  });

  afterEach(function () {
    rmSync(scratch, { recursive: true, force: true });
  });

  it('is finished by a list of its files, written last, and a copy that lost files since is made again', async function () {
    expect((await reachableBinaries(account, nativeDir, cache)).nativeDir).to.equal(copy);
    const listed = readFileSync(join(copy, '.complete'), 'utf8').split('\n');
    expect(listed).to.include.members(['bin/postgres', 'bin/initdb', 'lib/postgresql/plpgsql.so', 'share/postgresql/postgresql.conf.sample']);

    // The machine's temporary-file cleaning thins out lib/.
    rmSync(join(copy, 'lib', 'postgresql', 'plpgsql.so'));
    expect((await reachableBinaries(account, nativeDir, cache)).nativeDir).to.equal(copy);
    expect(existsSync(join(copy, 'lib', 'postgresql', 'plpgsql.so'))).to.equal(true);
  });

  it('leaves a complete copy in place, removes partial copies left for more than 10 minutes, and keeps recent ones', async function () {
    await reachableBinaries(account, nativeDir, cache);
    const inode = statSync(copy).ino;
    const abandoned = `${copy}.partial-abandoned`;
    const recent = `${copy}.partial-recent`;
    mkdirSync(abandoned);
    mkdirSync(recent);
    const elevenMinutesAgo = new Date(Date.now() - 11 * 60_000);
    utimesSync(abandoned, elevenMinutesAgo, elevenMinutesAgo);

    // Complete: nothing is touched.
    await reachableBinaries(account, nativeDir, cache);
    expect(statSync(copy).ino).to.equal(inode);
    expect([existsSync(abandoned), existsSync(recent)]).to.deep.equal([true, true]);

    // Unfinished (no list): a new copy (a file only the old one had is gone; inode numbers can be
    // reused, so they cannot tell), and the abandoned partial is gone.
    rmSync(join(copy, '.complete'));
    writeFileSync(join(copy, 'only-in-the-old-copy'), '');
    await reachableBinaries(account, nativeDir, cache);
    expect(existsSync(join(copy, 'only-in-the-old-copy'))).to.equal(false);
    expect(existsSync(join(copy, '.complete'))).to.equal(true);
    expect([existsSync(abandoned), existsSync(recent)]).to.deep.equal([false, true]);
  });

  it('takes none of its modes from an original that others can write to (npm install under umask 002)', async function () {
    const writable = join(scratch, 'home', 'writable');
    cpSync(dirname(nativeDir), writable, { recursive: true, verbatimSymlinks: true, dereference: false });
    for (const path of ['native', 'native/bin', 'native/bin/postgres', 'native/share']) chmodSync(join(writable, path), 0o775);

    expect((await reachableBinaries(account, join(writable, 'native'), cache)).nativeDir).to.equal(copy);
    expect([copy, join(copy, 'bin'), join(copy, 'bin', 'postgres'), join(copy, 'share')].map((path) => lstatSync(path).mode & 0o777)).to.deep.equal([0o755, 0o755, 0o755, 0o755]);
    // A second start uses it as it is.
    const inode = statSync(copy).ino;
    await reachableBinaries(account, join(writable, 'native'), cache);
    expect(statSync(copy).ino).to.equal(inode);
  });

  it('refuses, and leaves alone, a folder in its place that another user owns or that is a symbolic link', async function () {
    mkdirSync(copy);
    chownSync(copy, account.uid, account.gid);
    const refusal = async () => reachableBinaries(account, nativeDir, cache).then(() => null, (error: Error) => error.message);
    expect(await refusal()).to.equal(
      `${copy} is in the way of a copy of the PostgreSQL binaries and is not safe to use (it belongs to user ${account.uid}): remove it and start again`,
    );
    expect(lstatSync(copy).uid).to.equal(account.uid);

    renameSync(copy, join(scratch, 'elsewhere'));
    symlinkSync(join(scratch, 'elsewhere'), copy);
    expect(await refusal()).to.equal(
      `${copy} is in the way of a copy of the PostgreSQL binaries and is not safe to use (it is a symbolic link): remove it and start again`,
    );
    expect(readlinkSync(copy)).to.equal(join(scratch, 'elsewhere'));
  });
});

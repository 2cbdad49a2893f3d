import { expect } from 'chai';
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { userInfo } from 'node:os';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded-postgres.js';
import { reachableExtensions } from './extensions.js';
import { freePort, scratchDir } from './scratch.js';
import { ensureServerAccount } from './server-account.js';

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

async function failure(url: string, sql: string): Promise<string> {
  return query(url, sql).then(
    () => 'no error',
    (error: Error) => error.message,
  );
}

/**
 * An extension laid out as tools/pg-extensions.mjs lays out pgvector, made here so that these tests
 * need no download: its module is the server's own autoinc.so under another name, found only
 * through dynamic_library_path (its module_pathname has no $libdir/).
 */
async function probeExtension(dir: string): Promise<void> {
  const installed = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  mkdirSync(join(dir, 'share', 'extension'), { recursive: true });
  mkdirSync(join(dir, 'lib'));
  copyFileSync(join(dirname(dirname(installed.postgres)), 'lib', 'postgresql', 'autoinc.so'), join(dir, 'lib', 'launcher_probe.so'));
  writeFileSync(join(dir, 'share', 'extension', 'launcher_probe.control'), "default_version = '1.0'\nmodule_pathname = 'launcher_probe'\nrelocatable = true\ntrusted = true\n");
  writeFileSync(join(dir, 'share', 'extension', 'launcher_probe--1.0.sql'), "create function launcher_probe_autoinc() returns trigger as 'MODULE_PATHNAME', 'autoinc' language c;\n");
}

describe('startEmbeddedPostgres with an extensions folder', function () {
  this.timeout(60_000);
  let scratch: string;
  let server: EmbeddedPostgresHandle | undefined;

  beforeEach(function () {
    scratch = scratchDir('embedded-pg-extensions-');
  });

  afterEach(async function () {
    await server?.stop();
    server = undefined;
    rmSync(scratch, { recursive: true, force: true });
  });

  it('finds a control file there through extension_control_path and its module through dynamic_library_path, after its own', async function () {
    const extensions = join(scratch, 'extensions');
    await probeExtension(extensions);
    server = await startEmbeddedPostgres({ dir: join(scratch, 'pg'), port: await freePort(), extensionsDir: extensions });
    expect(server.extensionsDir).to.equal(extensions);
    const url = server.url('postgres');
    expect(await query(url, 'select current_setting($$extension_control_path$$) as control, current_setting($$dynamic_library_path$$) as library')).to.deep.equal([
      { control: `$system:${extensions}/share`, library: `$libdir:${extensions}/lib` },
    ]);
    await query(url, 'create extension launcher_probe');
    expect(await query(url, "select probin from pg_proc where proname = 'launcher_probe_autoinc'")).to.deep.equal([{ probin: 'launcher_probe' }]);
    // The server's own extensions are found as before.
    await query(url, 'create extension pg_trgm');
    expect(await query(url, 'select extname from pg_extension order by extname')).to.deep.equal([{ extname: 'launcher_probe' }, { extname: 'pg_trgm' }, { extname: 'plpgsql' }]);
  });

  it('adds nothing when the folder holds no share/extension: the server starts as before, and CREATE EXTENSION fails with its own error', async function () {
    server = await startEmbeddedPostgres({ dir: join(scratch, 'pg'), port: await freePort(), extensionsDir: join(scratch, 'not-installed') });
    expect(server.extensionsDir).to.equal(null);
    const url = server.url('postgres');
    expect(await query(url, 'select current_setting($$extension_control_path$$) as control, current_setting($$dynamic_library_path$$) as library')).to.deep.equal([
      { control: '$system', library: '$libdir' },
    ]);
    expect(await failure(url, 'create extension launcher_probe')).to.equal('extension "launcher_probe" is not available');
  });

  it('refuses a folder with a colon in its path, which the settings would take for two', function () {
    const odd = join(scratch, 'odd:name');
    mkdirSync(join(odd, 'share', 'extension'), { recursive: true });
    expect(() => reachableExtensions(null, odd)).to.throw(`the extensions folder ${odd} has a ':' in its path, which extension_control_path cannot hold: choose another`);
  });

  describe('as root, in a folder the postgres user cannot enter', function () {
    before(function () {
      // Only root can make a folder the postgres user cannot enter; as another user there is nothing to test.
      if (userInfo().uid !== 0) this.skip();
    });

    it('uses a copy under the cache folder named by its contents; a changed folder gets a copy of its own', async function () {
      const privateDir = join(scratch, 'home');
      mkdirSync(privateDir, { mode: 0o700 });
      chmodSync(privateDir, 0o700);
      const extensions = join(privateDir, '.data', 'pg-extensions-18');
      await probeExtension(extensions);
      const cache = join(scratch, 'cache');
      mkdirSync(cache);

      server = await startEmbeddedPostgres({ dir: join(scratch, 'pg'), port: await freePort(), extensionsDir: extensions, binaryCacheDir: cache });
      const copy = server.extensionsDir!;
      expect(copy).to.match(new RegExp(`^${cache}/pg-extensions-[0-9a-f]{16}$`));
      await query(server.url('postgres'), 'create extension launcher_probe');
      expect(await query(server.url('postgres'), "select probin from pg_proc where proname = 'launcher_probe_autoinc'")).to.deep.equal([{ probin: 'launcher_probe' }]);

      const account = ensureServerAccount();
      expect(reachableExtensions(account, extensions, cache), 'unchanged: the same copy').to.equal(copy);
      writeFileSync(join(extensions, 'share', 'extension', 'launcher_probe--1.0--1.1.sql'), '');
      const refreshed = reachableExtensions(account, extensions, cache);
      expect(refreshed).to.match(/pg-extensions-[0-9a-f]{16}$/);
      expect(refreshed).to.not.equal(copy);
    });
  });
});

import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@platform/testing';
import {
  dataLocationPath,
  localSigningKeySecretKeys,
  localStateDir,
  prepareEmbeddedSettings,
  provideSigningKeySecretKeys,
  runningPlatformPath,
  signingKeySecretKeysPath,
  startLockPath,
  takeStartLock,
} from '../local-state.js';

function runStart(env: NodeJS.ProcessEnv): { status: number | null; stderr: string } {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.DATABASE_URL;
  return spawnSync(process.execPath, ['--import', 'tsx', 'tools/start.ts'], { env: childEnv, encoding: 'utf8', timeout: 30_000 });
}

// As root, PostgreSQL runs as the `postgres` user. A clone in a home folder of mode 700 is out of
// its reach; `npm start` then keeps the data where it can reach it and says so.
describe('where npm start keeps its state', function () {
  let scratch: string;
  let clone: string;

  beforeEach(function () {
    scratch = mkdtempSync(join(tmpdir(), 'platform-state-'));
    chmodSync(scratch, 0o755);
    clone = join(scratch, 'home', 'clone');
    mkdirSync(clone, { recursive: true });
  });

  afterEach(function () {
    rmSync(scratch, { recursive: true, force: true });
  });

  it('keeps everything in the clone\'s .data folder when the postgres user can reach it', function () {
    chmodSync(join(scratch, 'home'), 0o755);
    expect(prepareEmbeddedSettings({}, clone)).to.deep.equal({ dir: join(clone, '.data', 'postgres'), port: 54329, extensionsDir: join(clone, '.data', 'pg-extensions-18') });
  });

  describe('the start lock, which keeps a second start in one place from stopping the first one\'s PostgreSQL', function () {
    it('npm start refuses while a live process holds it, and leaves it to that process', function () {
      const dir = join(clone, 'pg');
      writeFileSync(join(clone, 'start.lock'), `${process.pid}\n`);
      const run = runStart({ EMBEDDED_PG_DIR: dir });
      expect(run.status).to.equal(1);
      expect(run.stderr).to.equal(`npm start failed: another npm start (process ${process.pid}) is starting the platform here; wait for it, or stop it first\nStopped.\n`);
      expect(readFileSync(join(clone, 'start.lock'), 'utf8')).to.equal(`${process.pid}\n`);
      expect(existsSync(dir)).to.equal(false);
    });

    it('is taken over from a process that is gone, and then answers its holder', function () {
      const env = { EMBEDDED_PG_DIR: join(clone, 'pg') };
      const gone = spawnSync('true').pid;
      writeFileSync(startLockPath(env), `${gone}\n`);
      try {
        expect(takeStartLock(env)).to.equal(null);
        expect(readFileSync(startLockPath(env), 'utf8')).to.equal(`${process.pid}\n`);
        expect(takeStartLock(env)).to.equal(process.pid);
      } finally {
        rmSync(startLockPath(env), { force: true });
      }
    });
  });

  describe('as root, in a clone under a home folder of mode 700', function () {
    before(function () {
      // Only root runs PostgreSQL as the postgres user; as another user there is nothing to test.
      if (userInfo().uid !== 0) this.skip();
    });

    beforeEach(function () {
      chmodSync(join(scratch, 'home'), 0o700);
    });

    const made: string[] = [];
    afterEach(function () {
      for (const folder of made.splice(0)) rmSync(folder, { recursive: true, force: true });
    });

    /** A folder under /var/tmp as a test plants it, recorded as the clone's data folder. */
    function recordFolder(): string {
      const folder = mkdtempSync('/var/tmp/platform-test-');
      made.push(folder);
      chmodSync(folder, 0o755);
      mkdirSync(join(clone, '.data'));
      writeFileSync(dataLocationPath({}, clone), `${folder}\n`);
      return folder;
    }

    it('puts the data in a new folder of root\'s under /var/tmp, records it in .data, and keeps the credentials in the clone', function () {
      const settings = prepareEmbeddedSettings({ EMBEDDED_PG_PORT: '54400' }, clone);
      const folder = readFileSync(join(clone, '.data', 'postgres-location'), 'utf8').trim();
      made.push(folder);
      expect(folder).to.match(/^\/var\/tmp\/platform-[A-Za-z0-9]{6}$/);
      // The extensions stay in the clone: the launcher copies them where the server can read them.
      expect(settings).to.deep.equal({ dir: join(folder, 'postgres'), port: 54400, extensionsDir: join(clone, '.data', 'pg-extensions-18'), unreachable: join(clone, '.data', 'postgres') });
      expect([statSync(folder).uid, statSync(folder).mode & 0o777]).to.deep.equal([0, 0o755]);
      // The same clone finds the same folder at its next start; its credentials stay in the clone.
      expect(prepareEmbeddedSettings({}, clone).dir).to.equal(join(folder, 'postgres'));
      expect(localStateDir({}, clone)).to.equal(join(clone, '.data'));
    });

    it('makes a new folder when the recorded one is gone (the machine cleaned /var/tmp)', function () {
      const folder = recordFolder();
      rmSync(folder, { recursive: true });
      const dir = prepareEmbeddedSettings({}, clone).dir;
      const created = readFileSync(dataLocationPath({}, clone), 'utf8').trim();
      made.push(created);
      expect(created).to.not.equal(folder);
      expect(dir).to.equal(join(created, 'postgres'));
    });

    const planted: { why: string; plant: (folder: string) => string }[] = [
      { why: 'it belongs to user 54321', plant: (folder) => (chownSync(folder, 54321, 54321), folder) },
      { why: 'others can write to it', plant: (folder) => (chmodSync(folder, 0o777), folder) },
      {
        why: 'it is a symbolic link',
        plant: (folder) => {
          rmSync(folder, { recursive: true });
          mkdirSync(join(scratch, 'target', 'postgres'), { recursive: true });
          symlinkSync(join(scratch, 'target'), folder);
          return folder;
        },
      },
    ];
    for (const { why, plant } of planted) {
      it(`refuses a recorded folder that another user could have planted or changed: ${why}`, function () {
        const unsafe = plant(recordFolder());
        expect(() => prepareEmbeddedSettings({}, clone)).to.throw(`${unsafe} is not safe for root to use (${why}): remove ${unsafe} and start again`);
      });
    }

    it('keeps an EMBEDDED_PG_DIR that was asked for, and npm start refuses it with a message that says what to do', async function () {
      const asked = join(clone, 'pg');
      expect(prepareEmbeddedSettings({ EMBEDDED_PG_DIR: asked, PG_EXTENSIONS_DIR: 'extensions' }, clone)).to.deep.equal({ dir: asked, port: 54329, extensionsDir: join(clone, 'extensions') });

      const run = runStart({ EMBEDDED_PG_DIR: asked, EMBEDDED_PG_PORT: String(await freePort()), API_PORT: String(await freePort()), OAUTH_PORT: String(await freePort()) });
      expect(run.status).to.equal(1);
      expect(run.stderr).to.equal(
        `npm start failed: EMBEDDED_PG_DIR=${asked}: the 'postgres' user, which runs PostgreSQL when you are root, cannot enter it; ` +
          'choose a folder it can reach (for example under /var/tmp)\nStopped.\n',
      );
      expect(runningPlatformPath({ EMBEDDED_PG_DIR: asked })).to.equal(join(clone, 'running-platform.json'));
    });
  });
});

describe('the signing-key ring npm start keeps', function () {
  let scratch: string;

  beforeEach(function () {
    scratch = mkdtempSync(join(tmpdir(), 'platform-rings-'));
  });

  afterEach(function () {
    rmSync(scratch, { recursive: true, force: true });
  });

  it('is made once beside the credentials (mode 0600) and reused; a ring that is set wins', function () {
    const env = { EMBEDDED_PG_DIR: join(scratch, 'postgres') };
    const first = provideSigningKeySecretKeys(env).SIGNING_KEY_SECRET_KEYS;
    expect(first).to.match(/^local1:[A-Za-z0-9+/]{43}=$/);
    expect(signingKeySecretKeysPath(env)).to.equal(join(scratch, 'signing-key-secret-keys'));
    expect(statSync(signingKeySecretKeysPath(env)).mode & 0o777).to.equal(0o600);
    expect(provideSigningKeySecretKeys(env).SIGNING_KEY_SECRET_KEYS).to.equal(first);
    expect(provideSigningKeySecretKeys({ ...env, SIGNING_KEY_SECRET_KEYS: 'set:x' }).SIGNING_KEY_SECRET_KEYS).to.equal('set:x');
  });

  it('is given to a tool only when npm start made it: a tool never makes a ring of its own', function () {
    const env = { EMBEDDED_PG_DIR: join(scratch, 'postgres') };
    expect(localSigningKeySecretKeys(env).SIGNING_KEY_SECRET_KEYS).to.equal(undefined);
    expect(existsSync(signingKeySecretKeysPath(env))).to.equal(false);
    const made = provideSigningKeySecretKeys(env).SIGNING_KEY_SECRET_KEYS;
    expect(localSigningKeySecretKeys(env).SIGNING_KEY_SECRET_KEYS).to.equal(made);
  });
});

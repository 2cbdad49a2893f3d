import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@platform/testing';
import { embeddedSettings, localStateDir, runningPlatformPath } from '../local-state.js';

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
    expect(embeddedSettings({}, clone)).to.deep.equal({ dir: join(clone, '.data', 'postgres'), port: 54329 });
  });

  describe('as root, in a clone under a home folder of mode 700', function () {
    before(function () {
      if (userInfo().uid !== 0) this.skip();
    });

    beforeEach(function () {
      chmodSync(join(scratch, 'home'), 0o700);
    });

    it('puts the data under /var/tmp, named after the clone, and keeps the credentials in the clone', function () {
      const named = createHash('sha256').update(join(clone, '.data')).digest('hex').slice(0, 12);
      expect(embeddedSettings({ EMBEDDED_PG_PORT: '54400' }, clone)).to.deep.equal({
        dir: `/var/tmp/platform-${named}/postgres`,
        port: 54400,
        unreachable: join(clone, '.data', 'postgres'),
      });
      // The same clone finds the same folder at its next start; its credentials stay in the clone.
      expect(embeddedSettings({}, clone).dir).to.equal(`/var/tmp/platform-${named}/postgres`);
      expect(localStateDir({}, clone)).to.equal(join(clone, '.data'));
    });

    it('keeps an EMBEDDED_PG_DIR that was asked for, and npm start refuses it with a message that says what to do', async function () {
      const asked = join(clone, 'pg');
      expect(embeddedSettings({ EMBEDDED_PG_DIR: asked }, clone)).to.deep.equal({ dir: asked, port: 54329 });

      const env: NodeJS.ProcessEnv = { ...process.env, EMBEDDED_PG_DIR: asked, EMBEDDED_PG_PORT: String(await freePort()), API_PORT: String(await freePort()), OAUTH_PORT: String(await freePort()) };
      delete env.DATABASE_URL;
      const run = spawnSync(process.execPath, ['--import', 'tsx', 'tools/start.ts'], { env, encoding: 'utf8', timeout: 30_000 });
      expect(run.status).to.equal(1);
      expect(run.stderr).to.equal(
        `npm start failed: EMBEDDED_PG_DIR=${asked}: the 'postgres' user, which runs PostgreSQL when you are root, cannot enter it; ` +
          'choose a folder it can reach (for example under /var/tmp)\nStopped.\n',
      );
      expect(runningPlatformPath({ EMBEDDED_PG_DIR: asked })).to.equal(join(clone, 'running-platform.json'));
    });
  });
});

import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadMailSettings } from '@platform/config';
import { createMailer, type SmtpMailer } from '@platform/mail';
import { caughtMailFiles, provideMailCatcher } from '../dev-mail.js';

describe('the development mail catcher and npm run mail', function () {
  this.timeout(30_000);
  let root: string;

  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'dev-mail-'));
  });

  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });

  const runMail = (env: Record<string, string>, ...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'tools/dev-mail.ts', ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });

  it('catches the apps’ mail in .data/mail, and npm run mail prints the latest with its link', async function () {
    const base = { EMBEDDED_PG_DIR: join(root, '.data', 'postgres') };
    expect(runMail(base).stdout).to.include(`No mail caught yet in ${join(root, '.data', 'mail')}`);
    const { env, catcher, dir } = await provideMailCatcher({ ...base, MAIL_CATCHER_PORT: '0' });
    try {
      expect(dir).to.equal(join(root, '.data', 'mail'));
      expect(env.SMTP_URL).to.equal(catcher!.url).and.match(/^smtp:\/\/127\.0\.0\.1:\d+$/);
      const mailer = createMailer(loadMailSettings(env)) as SmtpMailer;
      await mailer.send({ to: 'ada@example.test', subject: 'First', text: 'https://example.test/first\n' });
      await mailer.send({ to: 'ada@example.test', subject: 'Reset your password', text: 'Open:\n\nhttps://app.example.test/reset?token=abc&identifier=ada%40example.test\n' });
      mailer.close();
      await catcher!.waitForMailTo('ada@example.test', { count: 2 });
    } finally {
      await catcher?.close();
    }
    expect(caughtMailFiles(dir)).to.have.length(2);
    const shown = runMail(base);
    expect(shown.status).to.equal(0);
    expect(shown.stdout).to.include('From: Platform <no-reply@localhost>\nTo: ada@example.test\nSubject: Reset your password\n\nOpen:\n\nhttps://app.example.test/reset?token=abc&identifier=ada%40example.test\n');
    expect(shown.stdout).to.include('Links:\n  https://app.example.test/reset?token=abc&identifier=ada%40example.test\n');
    const listed = runMail(base, '--list').stdout.trim().split('\n');
    expect(listed.map((line) => line.split('  ')[1])).to.deep.equal(['Reset your password', 'First']);
  });

  it('stays out of the way when SMTP_URL is set', async function () {
    const env = { EMBEDDED_PG_DIR: join(root, 'pg'), SMTP_URL: 'smtps://user:pass@mail.example.com' };
    expect(await provideMailCatcher(env)).to.deep.equal({ env, catcher: null, dir: join(root, 'mail') });
  });
});

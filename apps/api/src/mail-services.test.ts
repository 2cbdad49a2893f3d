import { expect } from 'chai';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import type { FailureCount, SignInFailureStore } from '@platform/domain';
import { Closers } from '@platform/process';
import { startTestMailServer } from '@platform/testing';
import { parseSmtpUrl } from '@platform/config';
import { openMailServices } from './mail-services.js';

const noFailures: SignInFailureStore = {
  read: async () => new Map<string, FailureCount>(),
  record: async () => undefined,
  forget: async () => undefined,
};

describe('the API’s mail services', function () {
  it('send through SMTP_URL, close with the API, and log what failed after its answer', async function () {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, new Writable({ write: (chunk, _encoding, done) => void (lines.push(String(chunk)), done()) }));
    const server = await startTestMailServer();
    const closers = new Closers(logger);
    try {
      const mail = openMailServices({ mail: { smtp: parseSmtpUrl(server.url), from: 'no-reply@localhost' } }, noFailures, logger, closers);
      await mail.mailer.send({ to: 'ada@example.test', subject: 'Hi', text: 'https://example.test/\n' });
      expect((await server.waitForMailTo('ada@example.test')).subject).to.equal('Hi');
      expect(await mail.mailThrottle.spend({ account: 'a', address: '192.0.2.1' })).to.equal(null);
      mail.detach(Promise.reject(new Error('the mail server went away')));
      await new Promise((resolve) => setImmediate(resolve));
      expect(JSON.parse(lines[0])).to.deep.include({ msg: 'a mail sent after its answer failed' });
      expect(JSON.parse(lines[0]).err.message).to.equal('the mail server went away');
    } finally {
      await closers.close();
      await server.close();
    }
  });
});

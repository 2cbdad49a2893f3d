import { expect } from 'chai';
import { parseSmtpUrl } from '@platform/config';
import { createMailer, type SmtpMailer } from '@platform/mail';
import { linkIn, startTestMailServer, type MailCatcher } from './mail-server.js';

describe('the test mail server', function () {
  let server: MailCatcher;

  before(async function () {
    server = await startTestMailServer();
  });

  after(async function () {
    await server?.close();
  });

  it('takes a real mail from libs/mail and hands a test its link', async function () {
    const mailer = createMailer({ smtp: parseSmtpUrl(server.url), from: 'Platform <no-reply@localhost>' }) as SmtpMailer;
    const waiting = server.waitForMailTo('ada@example.test');
    await mailer.send({ to: 'ada@example.test', subject: 'Reset your password', text: 'Open:\n\nhttps://app.example.test/reset?token=abc&identifier=ada%40example.test\n' });
    mailer.close();
    const mail = await waiting;
    const link = linkIn(mail, 'https://app.example.test/reset');
    expect(link.searchParams.get('token')).to.equal('abc');
    expect(server.latestTo('ADA@example.test')).to.equal(mail);
    expect(() => linkIn(mail, 'https://elsewhere.test')).to.throw("no link starting with 'https://elsewhere.test'");
  });

  it('says what it caught when the awaited mail does not come', async function () {
    const error = await server.waitForMailTo('nobody@example.test', { timeoutMs: 50 }).catch((caught: Error) => caught);
    expect((error as Error).message).to.match(/^no mail to nobody@example.test within 50 ms \(caught: /);
  });
});

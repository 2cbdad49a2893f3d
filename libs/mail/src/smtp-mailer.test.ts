import { expect } from 'chai';
import { createServer, type AddressInfo } from 'node:net';
import { parseSmtpUrl } from '@platform/config';
import { BadGatewayError, UnavailableError } from '@platform/domain';
import { MailCatcher } from './mail-catcher.js';
import { createMailer, SmtpMailer } from './smtp-mailer.js';

describe('SmtpMailer', function () {
  let server: MailCatcher;

  before(async function () {
    server = await MailCatcher.start();
  });

  after(async function () {
    await server?.close();
  });

  it('sends a real mail over SMTP, whose link reads back whole', async function () {
    const mailer = createMailer({ smtp: parseSmtpUrl(server.url), from: 'Acme <no-reply@acme.test>' }) as SmtpMailer;
    // Long enough that quoted-printable breaks the line, with characters it must encode.
    const link = `https://app.example.test/reset?callbackUrl=%2Fhome&token=${'A_b-9'.repeat(12)}&identifier=ada%40example.test`;
    await mailer.send({ to: 'Ada@Example.test', subject: 'Réinitialiser — reset', text: `Hello Zoë,\n\nOpen:\n\n${link}\n\nBye.\n` });
    mailer.close();
    const mail = await server.waitForMailTo('ada@example.test');
    expect(mail.subject).to.equal('Réinitialiser — reset');
    expect(mail.from).to.equal('Acme <no-reply@acme.test>');
    expect(mail.to).to.equal('Ada@example.test');
    expect(mail.recipients).to.deep.equal(['ada@example.test']);
    expect(mail.text).to.contain('Hello Zoë,');
    expect(mail.links).to.deep.equal([link]);
  });

  it('logs in where the URL carries a login', async function () {
    const mailer = new SmtpMailer(parseSmtpUrl(`smtp://user%40acme.test:s3cret@127.0.0.1:${server.port}`), 'no-reply@acme.test');
    await mailer.send({ to: 'grace@example.test', subject: 'Hi', text: 'https://example.test/x\n' });
    mailer.close();
    expect((await server.waitForMailTo('grace@example.test')).links).to.deep.equal(['https://example.test/x']);
  });

  it('answers 502 mail_delivery_failed when the server cannot be reached or talks nonsense', async function () {
    const silent = createServer((socket) => socket.end('500 not a mail server\r\n'));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const mailer = new SmtpMailer(parseSmtpUrl(`smtp://127.0.0.1:${(silent.address() as AddressInfo).port}`), 'no-reply@acme.test');
      const error = await mailer.send({ to: 'x@example.test', subject: 'x', text: 'x' }).catch((caught: unknown) => caught);
      expect(error).to.be.instanceOf(BadGatewayError);
      expect(error).to.include({ code: 'mail_delivery_failed', message: 'The mail server did not take the mail; try again later' });
    } finally {
      silent.close();
    }
  });

  it('without SMTP_URL, every send is 503 mail_not_configured', async function () {
    const error = await createMailer({ smtp: null, from: 'no-reply@acme.test' }).send({ to: 'x@example.test', subject: 'x', text: 'x' }).catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(UnavailableError);
    expect(error).to.include({ code: 'mail_not_configured' });
  });
});

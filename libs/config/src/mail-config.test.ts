import { expect } from 'chai';
import { ConfigError } from './env.js';
import { loadMailSettings, parseSmtpUrl } from './mail-config.js';

describe('mail settings', () => {
  it('sends no mail without SMTP_URL, from the default sender', () => {
    expect(loadMailSettings({})).to.deep.equal({ smtp: null, from: 'Platform <no-reply@localhost>' });
  });

  it('reads smtp:// and smtps:// with a percent-encoded login and default ports', () => {
    expect(parseSmtpUrl('smtp://ada%40example.com:p%3Ass@mail.example.com')).to.deep.equal({
      host: 'mail.example.com',
      port: 587,
      secure: false,
      auth: { user: 'ada@example.com', pass: 'p:ss' },
    });
    expect(parseSmtpUrl('smtps://mail.example.com')).to.deep.equal({ host: 'mail.example.com', port: 465, secure: true, auth: null });
    expect(parseSmtpUrl('smtp://[::1]:2525')).to.deep.include({ host: '::1', port: 2525 });
  });

  it('refuses a bad URL with a message naming the variable', () => {
    const cases: [string, string][] = [
      ['not a url', 'SMTP_URL: is not a valid URL; expected smtp://user:password@host:587 or smtps://user:password@host:465'],
      ['https://mail.example.com', 'SMTP_URL: must use smtp: or smtps:, got https:'],
      ['smtp://mail.example.com/inbox', 'SMTP_URL: must be only scheme, login, host and port (no path or query)'],
      ['smtp://:secret@mail.example.com', 'SMTP_URL: has a password but no user name'],
      ['smtp://mail.example.com:99999', 'SMTP_URL: is not a valid URL; expected smtp://user:password@host:587 or smtps://user:password@host:465'],
    ];
    for (const [value, message] of cases) {
      expect(() => loadMailSettings({ SMTP_URL: value }), value).to.throw(ConfigError, message);
    }
  });

  it('checks MAIL_FROM', () => {
    expect(loadMailSettings({ MAIL_FROM: 'Acme <hello@acme.test>' }).from).to.equal('Acme <hello@acme.test>');
    expect(() => loadMailSettings({ MAIL_FROM: 'nobody' })).to.throw(ConfigError, 'MAIL_FROM: must be an address');
  });
});

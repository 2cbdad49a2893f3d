import { ConfigError, readOptionalString, type Env } from './env.js';

/** Where the platform's mail goes: an SMTP server, reached as SMTP_URL says. */
export interface SmtpSettings {
  host: string;
  port: number;
  /** smtps:// (TLS from the first byte, port 465 by default); smtp:// upgrades with STARTTLS when the server offers it. */
  secure: boolean;
  /** The login, when the URL carries one (user and password percent-decoded). */
  auth: { user: string; pass: string } | null;
}

/** SMTP_URL and MAIL_FROM (README "Email"). */
export interface MailSettings {
  /** null when SMTP_URL is unset: the platform sends no mail (`npm start` sets it to its development catcher). */
  smtp: SmtpSettings | null;
  /** The sender of every mail, `name <address>` or a bare address. */
  from: string;
}

export const DEFAULT_MAIL_FROM = 'Platform <no-reply@localhost>';

const ADDRESS = /^[^\s@<>]{1,64}@[^\s@<>]{1,255}$/;

/** SMTP_URL's value, checked: `smtp://` or `smtps://`, a host, an optional port and login, nothing else. */
export function parseSmtpUrl(value: string, variable = 'SMTP_URL'): SmtpSettings {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(variable, 'is not a valid URL; expected smtp://user:password@host:587 or smtps://user:password@host:465');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new ConfigError(variable, `must use smtp: or smtps:, got ${url.protocol}`);
  }
  if (!url.hostname) throw new ConfigError(variable, 'names no host');
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) {
    throw new ConfigError(variable, 'must be only scheme, login, host and port (no path or query)');
  }
  const secure = url.protocol === 'smtps:';
  const port = url.port ? Number(url.port) : secure ? 465 : 587;
  let auth: SmtpSettings['auth'] = null;
  if (url.username || url.password) {
    try {
      auth = { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
    } catch {
      throw new ConfigError(variable, 'has a login that is not valid percent-encoding');
    }
    if (!auth.user) throw new ConfigError(variable, 'has a password but no user name');
  }
  // IPv6 hosts come back bracketed; the socket wants them bare.
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port, secure, auth };
}

/** A sender: `ada@example.com` or `Ada <ada@example.com>`. */
export function parseMailFrom(value: string, variable = 'MAIL_FROM'): string {
  const named = /^([^<>]*)<([^<>]+)>$/.exec(value);
  const address = (named ? named[2] : value).trim();
  if (!ADDRESS.test(address)) throw new ConfigError(variable, `must be an address such as no-reply@example.com or "Name <no-reply@example.com>", got '${value}'`);
  return value;
}

export function loadMailSettings(env: Env): MailSettings {
  const url = readOptionalString(env, 'SMTP_URL');
  return {
    smtp: url === undefined ? null : parseSmtpUrl(url),
    from: parseMailFrom(readOptionalString(env, 'MAIL_FROM') ?? DEFAULT_MAIL_FROM),
  };
}

/**
 * Reads what the platform's mails are made of (nodemailer's output: headers, a text/plain body,
 * quoted-printable or base64, maybe inside multipart): enough to show a mail caught on this
 * machine and follow its links, not a general MIME parser.
 */

export interface ReadMail {
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  subject: string;
  from: string;
  to: string;
  /** The text/plain body, decoded. */
  text: string;
  /** Every http(s) URL in the text, in order. */
  links: string[];
}

function splitHead(raw: string): [string, string] {
  const match = /\r?\n\r?\n/.exec(raw);
  return match ? [raw.slice(0, match.index), raw.slice(match.index + match[0].length)] : [raw, ''];
}

/** RFC 2047 encoded words (`=?UTF-8?Q?...?=`, `=?UTF-8?B?...?=`) in a header value. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=/g, (_, _charset: string, encoding: string, text: string) =>
      encoding.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8'),
    );
}

function parseHeaders(head: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = decodeWords(line.slice(colon + 1).trim());
  }
  return headers;
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch (encoding?.toLowerCase()) {
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
    case 'quoted-printable': {
      const bytes = body.replace(/=\r?\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      return Buffer.from(bytes, 'latin1').toString('utf8');
    }
    default:
      return body;
  }
}

/** The text/plain part of an entity, decoded; '' when it has none. */
function textOf(headers: Record<string, string>, body: string): string {
  const type = headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    const parts = body.split(`--${boundary}`).slice(1);
    for (const part of parts) {
      if (part.startsWith('--')) break;
      const [head, partBody] = splitHead(part.replace(/^\r?\n/, ''));
      const text = textOf(parseHeaders(head), partBody.replace(/\r?\n$/, ''));
      if (text) return text;
    }
    return '';
  }
  return /^text\/plain/i.test(type) ? decodeBody(body, headers['content-transfer-encoding']).replace(/\r\n/g, '\n') : '';
}

export function readMail(raw: string): ReadMail {
  const [head, body] = splitHead(raw);
  const headers = parseHeaders(head);
  const text = textOf(headers, body);
  return {
    headers,
    subject: headers.subject ?? '',
    from: headers.from ?? '',
    to: headers.to ?? '',
    text,
    links: text.match(/https?:\/\/[^\s<>"]+/g) ?? [],
  };
}

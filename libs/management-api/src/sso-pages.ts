import { createHash } from 'node:crypto';
import { escapeHtml, htmlDocument, respond, type Responded, type ResponseSpec } from '@platform/http';

// The pages the OIDC callback answers with: the form that carries a signed-in user's token to the
// tenant's app, and the page that says why a sign-in failed. Every interpolated value is escaped.

/** The one script of the form page: the Content-Security-Policy allows it by its hash and nothing else. */
const SUBMIT_SCRIPT = `document.getElementById('sso-result').submit();`;
const SUBMIT_SCRIPT_HASH = `'sha256-${createHash('sha256').update(SUBMIT_SCRIPT).digest('base64')}'`;

const BASE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store',
  Pragma: 'no-cache',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
};

/**
 * The form's target as a CSP source: its origin and path (a browser ignores the path once the app
 * redirects, per CSP 3). Only the origin when the path has a character a CSP header cannot carry.
 */
function formActionSource(target: string): string {
  const url = new URL(target);
  const withPath = `${url.origin}${url.pathname}`;
  return /[\s;,'"]/.test(withPath) ? url.origin : withPath;
}

function cookies(setCookies: string[]): Record<string, string[]> {
  return setCookies.length > 0 ? { 'Set-Cookie': setCookies } : {};
}

/**
 * The signed-in answer: a form that posts the fields to `target` and submits itself (a button
 * where scripts do not run). The CSP lets the form go to `target` only.
 */
export function formPostPage(target: string, fields: Record<string, string>, setCookies: string[]): Responded {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('\n');
  const body = `<form id="sso-result" method="post" action="${escapeHtml(target)}">
${inputs}
<noscript><p>Signed in.</p><button type="submit">Continue</button></noscript>
</form>
<script>${SUBMIT_SCRIPT}</script>`;
  return respond({
    status: 200,
    body: htmlDocument('Signing you in…', body),
    headers: {
      ...BASE_HEADERS,
      'Content-Security-Policy': `default-src 'none'; script-src ${SUBMIT_SCRIPT_HASH}; form-action ${formActionSource(target)}; frame-ancestors 'none'; base-uri 'none'`,
      ...cookies(setCookies),
    },
  });
}

/** A sign-in that failed, said in words and by its code; nothing on it runs or loads. */
export function failurePage(status: number, code: string, message: string, setCookies: string[]): Responded {
  const body = `<main>
<h1>Sign-in failed</h1>
<p>${escapeHtml(message)}</p>
<p>Error code: <code id="error-code">${escapeHtml(code)}</code></p>
</main>`;
  return respond({
    status,
    body: htmlDocument('Sign-in failed', body),
    headers: {
      ...BASE_HEADERS,
      'Content-Security-Policy': `default-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
      ...cookies(setCookies),
    },
  });
}

export function htmlPage(status: number, description: string): ResponseSpec {
  return { status, description, contentType: 'text/html' };
}

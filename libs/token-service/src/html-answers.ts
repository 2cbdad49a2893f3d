import { respond, type ResponseSpec } from '@platform/http';
import { NO_STORE } from './no-cache.js';

/**
 * An HTML page with headers that keep it out of frames, caches and other origins' reach.
 * `formTarget` is where the page's form may end up: a redirect after a form post must match
 * form-action too, so the client's origin is allowed.
 */
export function htmlAnswer(status: number, body: string, options: { formTarget?: string; setCookie?: string } = {}) {
  const formAction = options.formTarget ? `'self' ${new URL(options.formTarget).origin}` : "'self'";
  return respond({
    status,
    body,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      ...NO_STORE,
      'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      ...(options.setCookie ? { 'Set-Cookie': options.setCookie } : {}),
    },
  });
}

/** 303 See Other: after a form post the browser follows it with a GET. */
export function redirectAnswer(location: string) {
  return respond({ status: 303, headers: { Location: location, ...NO_STORE } });
}

/** How a route declares one of its HTML pages. */
export function htmlPageResponse(status: number, description: string): ResponseSpec {
  return { status, description, contentType: 'text/html' };
}

/** How a route declares its redirect. */
export function redirectResponse(description: string): ResponseSpec {
  return { status: 303, description, headers: { Location: 'Where the browser goes next' } };
}

/** A wait told to a person: "in 3 seconds", "in 1 minute", "in 15 minutes" (rounded up). */
export function inTime(seconds: number): string {
  if (seconds < 120) return `in ${seconds} second${seconds === 1 ? '' : 's'}`;
  return `in ${Math.ceil(seconds / 60)} minutes`;
}

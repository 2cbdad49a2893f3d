import { DomainError, NotFoundError, ValidationError, acceptInvite, previewInvite, startTokenSession } from '@platform/domain';
import { escapeHtml, htmlDocument, optional, prefersHtml, queryBoolean, record, respond, text, toApiError, type Responded } from '@platform/http';
import { defineManagementRoute, HASHING_429 } from '../management-scope.js';
import { emailField } from '../request-fields.js';
import { htmlPage } from '../sso-pages.js';
import { NO_STORE, nextUrl, signedInHeaders } from './auth.routes.js';
import { allowedCallbackUrl, assertCsrfDoubleSubmit, csrfTokenOf, newCsrfToken } from './family-cookies.js';
import { DOUBLE_SUBMIT_CSRF, FAMILY_BASE, FAMILY_TAGS, cookiesOf, familyBaseUrl, familyTenantParams, tokenDeps } from './family-route.js';

/*
 * Where an invite link without an app leads: this API's own page. Opening it (a GET, which a mail
 * client or a link scanner may do on its own) changes nothing: the page shows the invite and a
 * form; only the invitee's click posts it, with the CSRF double submit, and accepts.
 */

const LinkQuery = record({
  token: text({ min: 1, max: 256, description: 'The token of the mailed link' }),
  identifier: emailField('The address the invite was mailed to'),
  callbackUrl: optional(text({ max: 2048, description: 'Where the invitee goes once accepted; kept only on an allowed origin' })),
  json: optional(queryBoolean('Ignored')),
});
const AcceptForm = record({
  token: text({ min: 1, max: 256, description: 'The link’s token' }),
  identifier: emailField('The link’s `identifier`'),
  callbackUrl: optional(text({ max: 2048, description: 'Where the invitee goes next; allowed origins only' })),
  csrfToken: optional(text({ max: 256, description: 'The page’s CSRF token (the `nile.csrf-token` cookie’s)' })),
});

const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  ...NO_STORE,
  'X-Frame-Options': 'DENY',
  // The page's address holds the token: no other site learns it from a Referer. Not no-referrer:
  // under it browsers send `Origin: null` with the form's POST, which the origin check refuses.
  'Referrer-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
};

function page(status: number, title: string, body: string, formAction: string | null, setCookies: string[] = []): Responded {
  return respond({
    status,
    body: htmlDocument(title, `<main>\n${body}\n</main>`),
    headers: {
      ...PAGE_HEADERS,
      'Content-Security-Policy': `default-src 'none'; form-action ${formAction ?? "'none'"}; frame-ancestors 'none'; base-uri 'none'`,
      ...(setCookies.length > 0 ? { 'Set-Cookie': setCookies } : {}),
    },
  });
}

function refusalPage(error: DomainError): Responded {
  const { body } = toApiError(error);
  return page(body.statusCode, 'Invite not accepted', `<h1>This invite cannot be used</h1>\n<p>${escapeHtml(body.message)}</p>\n<p>Error code: <code id="error-code">${escapeHtml(body.errorCode)}</code></p>`, null);
}

export const familyInviteLandingRoutes = [
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/tenants/{tenantId}/invite`,
    operationId: 'familyInvitePage',
    summary: 'The mailed invite link’s page: shows the invite and a form to accept it',
    description:
      'Where an invite link points when the database has no app origin for it. Reads only: a used, expired or revoked token, ' +
      'or one for another tenant or address, is a 400 page (invalid_one_time_token); a live one, a page naming the tenant and ' +
      'the address with an Accept button, which posts to POST /tenants/{tenantId}/invite/accept with the page’s CSRF token ' +
      '(the `nile.csrf-token` cookie is set when the browser has none). The page loads and runs nothing, and sends no Referer to another origin.',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    query: LinkQuery,
    success: { status: 200, contentType: 'text/html', description: 'The invite and its Accept form', headers: { 'Set-Cookie': '`nile.csrf-token`, when new' } },
    responses: [htmlPage(400, 'The link’s token is not valid (invalid_one_time_token)'), htmlPage(404, 'The database is gone')],
    errors: [],
    handler: async ({ params, query, header, scope }) => {
      let invite;
      try {
        invite = await previewInvite(tokenDeps(scope), { databaseId: params.database, tenantId: params.tenantId, token: query.token, email: query.identifier });
      } catch (error) {
        if (error instanceof ValidationError || error instanceof NotFoundError) return refusalPage(error);
        throw error;
      }
      const cookies = cookiesOf(scope, header);
      const held = csrfTokenOf(scope.familyAuth.csrfSecret, cookies.get('csrf-token'));
      const fresh = held ? null : newCsrfToken(scope.familyAuth.csrfSecret);
      const action = `${familyBaseUrl(scope, params.database)}/tenants/${params.tenantId}/invite/accept`;
      const fields: Record<string, string> = { token: query.token, identifier: query.identifier, csrfToken: held ?? fresh!.token };
      const callback = allowedCallbackUrl(scope.familyAuth, query.callbackUrl);
      if (callback) fields.callbackUrl = callback;
      const inputs = Object.entries(fields)
        .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
        .join('\n');
      const tenant = invite.tenantName ? `“${escapeHtml(invite.tenantName)}”` : 'a team';
      const body =
        `<h1>Join ${tenant}</h1>\n<p>${escapeHtml(invite.email)} is invited to join ${tenant}.</p>\n` +
        `<form id="accept-invite" method="post" action="${escapeHtml(action)}">\n${inputs}\n<button type="submit">Accept the invite</button>\n</form>`;
      return page(200, 'You are invited', body, new URL(action).origin, fresh ? [cookies.set('csrf-token', fresh.cookieValue)] : []);
    },
  }),
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/tenants/{tenantId}/invite/accept`,
    operationId: 'familyAcceptInviteForm',
    summary: 'Accept an invite from its page’s form (signs the invitee in)',
    description:
      `${DOUBLE_SUBMIT_CSRF} The form of GET /tenants/{tenantId}/invite posts here; accepting is as PUT /tenants/{tenantId}/invite ` +
      'says (the token proves the inbox; an address without an account gets one with no password). Then 303 to `callbackUrl` ' +
      'when it is on an allowed origin, else a page that says so. A used, expired or revoked token is 400 invalid_one_time_token ' +
      '(a form posted twice, a double click): an HTML page that says so when the Accept header ranks text/html above JSON ' +
      `(a browser), the APIError otherwise; so is a database gone since (404). ${HASHING_429}`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    body: AcceptForm,
    formOrJson: true,
    success: { status: 200, contentType: 'text/html', description: 'Accepted and signed in: a page that says so', headers: { 'Set-Cookie': '`nile.session-token`' } },
    responses: [
      { status: 303, description: 'Accepted and signed in: on to the callback', headers: { Location: 'The callback', 'Set-Cookie': '`nile.session-token`' } },
      htmlPage(400, 'The token is used, expired or revoked (invalid_one_time_token): a page for a browser, the APIError otherwise (always for a malformed form)'),
      htmlPage(404, 'The database is gone: a page for a browser, the APIError otherwise'),
    ],
    errors: [400, 403, 404, 429],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      const cookies = cookiesOf(scope, header);
      assertCsrfDoubleSubmit(scope.familyAuth, cookies, header, body.csrfToken);
      let accepted;
      try {
        accepted = await acceptInvite(tokenDeps(scope), { databaseId: params.database, tenantId: params.tenantId, token: body.token, email: body.identifier, clientAddress });
      } catch (error) {
        // The form's own browser (posted twice, or from a page left open) reads a page; a JSON client, its APIError.
        // Only the refusals documented as pages: anything else (the customer database out of reach, 503) stays an APIError.
        const documented = error instanceof ValidationError || error instanceof NotFoundError;
        if (documented && prefersHtml(header('accept') ?? '')) return refusalPage(error);
        throw error;
      }
      const result = await startTokenSession(scope, params.database, accepted.user.id);
      const next = nextUrl(scope, header, body.callbackUrl);
      const headers = signedInHeaders(cookies, result, next);
      if (next) return respond({ status: 303, headers });
      const done = page(200, 'Invite accepted', `<h1>Invite accepted</h1>\n<p>${escapeHtml(accepted.user.email)} is now a member.</p>`, null);
      return { ...done, headers: { ...done.headers, ...headers } };
    },
  }),
];

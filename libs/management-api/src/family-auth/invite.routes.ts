import { acceptInvite, createInvite, databaseAuthSettings, listInvites, revokeInvite, startTokenSession, type TenantInvite } from '@platform/domain';
import { arrayOf, dateTime, nullable, optional, record, respond, text, uuid } from '@platform/http';
import { defineManagementRoute, HASHING_429, type ManagementScope } from '../management-scope.js';
import { emailField } from '../request-fields.js';
import { CurrentUserSchema, presentCurrentUser } from '../user.presenter.js';
import { nextUrl, signedInHeaders } from './auth.routes.js';
import { allowedCallbackUrl, assertCsrfDoubleSubmit, assertSdkOrigin, mailedLinkTarget } from './family-cookies.js';
import { COOKIE_AUTH, DOUBLE_SUBMIT_CSRF, FAMILY_BASE, FAMILY_TAGS, SDK_ORIGIN_CSRF, cookiesOf, familyBaseUrl, familyTenantParams, signedIn, tokenDeps } from './family-route.js';

const urlField = (description: string) => optional(nullable(text({ max: 2048, description })));
const InviteParams = record({ database: uuid('The database id'), tenantId: uuid('The tenant id'), inviteId: uuid('The invite id') });
const InviteRequest = record({
  identifier: emailField('The address to invite'),
  csrfToken: optional(text({ max: 256, description: 'The token from GET /auth/csrf' })),
  callbackUrl: urlField('The app’s page the invitee lands on once accepted; allowed origins only'),
  redirectUrl: urlField('Where the mailed link points (the app’s SDK route for the invite, which accepts it); only on one of the database’s app origins (its auth settings)'),
});
const AcceptRequest = record({
  identifier: emailField('The address the invite was mailed to (the link’s `identifier`)'),
  token: text({ min: 1, max: 256, description: 'The link’s token' }),
  callbackUrl: urlField('Where the invitee goes next'),
});
const InviteSchema = record({
  id: uuid(),
  tenant_id: uuid(),
  identifier: text({ max: 320, description: 'The invited address' }),
  roles: nullable(text({ max: 64, description: 'Always null: tenants have no roles here' })),
  created_by: nullable(uuid('The member who invited')),
  created: dateTime(),
  expires: dateTime(),
});

const INVITES =
  'Invites: any member of the tenant may invite an address, list the pending invites and revoke them (no ' +
  'TENANT_MEMBERS_* setting: unlike linking a user by id, nobody joins without following the mailed link). Invites last ' +
  'a week and work once; a new invite to the same address replaces the old. Not a member (or no such tenant): 404 tenant_not_found.';

function presentInvite(invite: TenantInvite) {
  return {
    id: invite.id,
    tenant_id: invite.tenantId,
    identifier: invite.email,
    roles: null,
    created_by: invite.invitedBy,
    created: invite.created.toISOString(),
    expires: invite.expires.toISOString(),
  };
}

/** The invite link's base: the app's SDK route, else its page, on one of the database's app origins; else this API's invite page. */
async function inviteLinkBase(scope: ManagementScope, databaseId: string, tenantId: string, body: { redirectUrl?: string | null; callbackUrl?: string | null }): Promise<string> {
  const callback = allowedCallbackUrl(scope.familyAuth, body.callbackUrl ?? undefined);
  const { appOrigins } = await databaseAuthSettings(scope, databaseId);
  const app = mailedLinkTarget(appOrigins, body.redirectUrl ?? undefined) ?? mailedLinkTarget(appOrigins, callback ?? undefined);
  const url = new URL(app ?? `${familyBaseUrl(scope, databaseId)}/tenants/${tenantId}/invite`);
  if (callback) url.searchParams.set('callbackUrl', callback);
  return url.toString();
}

export const familyInviteRoutes = [
  defineManagementRoute({
    method: 'POST',
    path: `${FAMILY_BASE}/tenants/{tenantId}/invite`,
    operationId: 'familyCreateInvite',
    summary: 'Invite an address to the tenant: the invitee is mailed a link',
    description:
      `${COOKIE_AUTH} ${DOUBLE_SUBMIT_CSRF} ${INVITES} The link is \`redirectUrl\` when on one of the database’s app origins (its auth ` +
      'settings; the app’s SDK route, which turns the click into PUT /tenants/{tenantId}/invite), else `callbackUrl` when on one ' +
      '(the app’s page calls acceptInvite), else this API’s page GET /tenants/{tenantId}/invite (which shows the invite and a form ' +
      'to accept it); `token`, `identifier` and `callbackUrl` are added. ' +
      '409 already_member, 409 invite_quota_exceeded, 429 too_many_attempts, 502 mail_delivery_failed (the invite stays pending).',
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    body: InviteRequest,
    formOrJson: true,
    success: { status: 201, description: 'Invited and mailed', schema: InviteSchema },
    errors: [401, 403, 404, 409, 429, 502, 503],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      assertCsrfDoubleSubmit(scope.familyAuth, cookiesOf(scope, header), header, body.csrfToken);
      const { caller } = await signedIn(scope, params.database, header);
      const linkBase = await inviteLinkBase(scope, params.database, params.tenantId, body);
      const invite = await createInvite(tokenDeps(scope), caller, { databaseId: params.database, tenantId: params.tenantId, email: body.identifier, clientAddress, linkBase });
      return respond({ status: 201, body: presentInvite(invite) });
    },
  }),
  defineManagementRoute({
    method: 'GET',
    path: `${FAMILY_BASE}/tenants/{tenantId}/invites`,
    operationId: 'familyListInvites',
    summary: 'The tenant’s pending invites, newest first',
    description: `${COOKIE_AUTH} ${INVITES}`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    success: { status: 200, description: 'The pending invites', schema: arrayOf(InviteSchema) },
    errors: [401, 404],
    handler: async ({ params, header, scope }) => {
      const { caller } = await signedIn(scope, params.database, header);
      return (await listInvites(tokenDeps(scope), caller, { databaseId: params.database, tenantId: params.tenantId })).map(presentInvite);
    },
  }),
  defineManagementRoute({
    method: 'PUT',
    path: `${FAMILY_BASE}/tenants/{tenantId}/invite`,
    operationId: 'familyAcceptInvite',
    summary: 'Accept an invite with the mailed link’s token (signs the invitee in)',
    description:
      `${SDK_ORIGIN_CSRF} No session needed: the token proves the inbox. The address’s account joins the tenant; an address ` +
      'without one gets a new account with no password (they set one with forgot-password, or sign in by SSO); either way ' +
      'the address counts as verified, and the invitee is signed in. A used, expired or revoked token, one for another ' +
      `tenant or address, or to a tenant deleted since, is 400 invalid_one_time_token and changes nothing. ${HASHING_429}`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: familyTenantParams,
    body: AcceptRequest,
    formOrJson: true,
    success: { status: 200, description: 'Accepted and signed in', schema: CurrentUserSchema, headers: { 'Set-Cookie': '`nile.session-token`', Location: 'The callback, when allowed' } },
    errors: [400, 403, 404, 429],
    handler: async ({ params, body, header, scope, clientAddress }) => {
      assertSdkOrigin(scope.familyAuth, header);
      const accepted = await acceptInvite(tokenDeps(scope), { databaseId: params.database, tenantId: params.tenantId, token: body.token, email: body.identifier, clientAddress });
      const result = await startTokenSession(scope, params.database, accepted.user.id);
      const next = nextUrl(scope, header, body.callbackUrl ?? undefined);
      return respond({ body: presentCurrentUser({ user: result.user, tenantIds: result.tenantIds }), headers: signedInHeaders(cookiesOf(scope, header), result, next) });
    },
  }),
  defineManagementRoute({
    method: 'DELETE',
    path: `${FAMILY_BASE}/tenants/{tenantId}/invite/{inviteId}`,
    operationId: 'familyRevokeInvite',
    summary: 'Revoke a pending invite: its link stops working',
    description: `${COOKIE_AUTH} ${SDK_ORIGIN_CSRF} ${INVITES} 404 invite_not_found when no such invite is pending.`,
    tags: FAMILY_TAGS,
    auth: 'cookie',
    params: InviteParams,
    success: { status: 204, description: 'Revoked' },
    errors: [401, 403, 404],
    handler: async ({ params, header, scope }) => {
      assertSdkOrigin(scope.familyAuth, header);
      const { caller } = await signedIn(scope, params.database, header);
      await revokeInvite(tokenDeps(scope), caller, { databaseId: params.database, tenantId: params.tenantId, inviteId: params.inviteId });
      return respond({ status: 204 });
    },
  }),
];

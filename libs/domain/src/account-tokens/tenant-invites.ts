import { assertEmail, assertPassword, cleanPersonName } from '../account-rules.js';
import { ConflictError, NotFoundError, RateLimitedError } from '../errors.js';
import type { User } from '../model.js';
import { hashPassword } from '../password-hashing.js';
import { newUserClaim } from '../use-cases/users.js';
import { requireMembership, tenantNotFound, type SignedInUser } from '../use-cases/membership.js';
import { inviteMail } from './account-mails.js';
import type { OneTimeTokenRecord } from './account-token-ports.js';
import { findTokenDatabase, foldEmail, invalidToken, lifetimes, linkWith, requireTokenDatabase, type AccountTokenDeps, type TokenDatabase } from './account-token-deps.js';

/*
 * Invites to a tenant of a database, by email. The mailed link's token is what proves the
 * invitee reads that inbox: accepting never trusts an email alone. Invites expire
 * (lifetimes.inviteSeconds, a week by default), can be listed and revoked by the tenant's members,
 * and work once.
 */

/** Pending invites one tenant may have: each puts mail, worded by a member, in a stranger's inbox. */
export const INVITES_PER_TENANT = 100;

/** A pending invite, as members of its tenant see it. */
export interface TenantInvite {
  id: string;
  tenantId: string;
  email: string;
  invitedBy: string | null;
  created: Date;
  expires: Date;
}

function inviteOf(record: OneTimeTokenRecord): TenantInvite {
  return { id: record.id, tenantId: record.tenantId!, email: record.email, invitedBy: record.createdBy, created: record.created, expires: record.expires };
}

async function memberAccess(deps: AccountTokenDeps, caller: SignedInUser, databaseId: string, tenantId: string): Promise<TokenDatabase> {
  const access = await requireTokenDatabase(deps, databaseId);
  await requireMembership(access, caller, tenantId);
  return access;
}

/**
 * A member of the tenant invites an email to it and the invitee is mailed a link
 * (`linkBase?token=...&identifier=<email>`). Not a member (or no such tenant): 404
 * `tenant_not_found`; session ended: 401. The email already a member's: 409 `already_member`
 * (members see each other's emails anyway). Inviting a pending email again replaces its invite.
 * Past INVITES_PER_TENANT pending invites: 409 `invite_quota_exceeded`. Mails to one address and
 * from one client address are throttled (429). A failure to send is 502 `mail_delivery_failed`
 * and leaves the invite pending (it can be sent again).
 */
export async function createInvite(
  deps: AccountTokenDeps,
  caller: SignedInUser,
  input: { databaseId: string; tenantId: string; email: string; clientAddress: string; linkBase: string },
): Promise<TenantInvite> {
  const email = foldEmail(input.email);
  assertEmail(email);
  linkWith(input.linkBase, 'x', email);
  const access = await memberAccess(deps, caller, input.databaseId, input.tenantId);
  const [tenant, inviter, existing] = await Promise.all([
    access.data.tenants.find(input.tenantId),
    access.data.users.find(caller.userId),
    access.data.users.findByEmail(email),
  ]);
  if (!tenant || !inviter) throw tenantNotFound(input.tenantId);
  if (existing && (await access.data.users.tenantIds(existing.id)).includes(tenant.id)) {
    throw new ConflictError('already_member', `${existing.email} is already a member of the tenant`);
  }
  const pending = await access.account.tokens.listLive('tenant_invite', tenant.id);
  if (pending.filter((invite) => invite.email !== email).length >= INVITES_PER_TENANT) {
    throw new ConflictError('invite_quota_exceeded', `A tenant may have at most ${INVITES_PER_TENANT} pending invites; revoke some first`);
  }
  const wait = await deps.mailThrottle.spend({ account: `tenant_invite:${input.databaseId}:${email}`, address: input.clientAddress });
  if (wait !== null) throw new RateLimitedError(wait, 'Too many invites; try again later');
  await access.account.tokens.revokeAll('tenant_invite', { email, tenantId: tenant.id });
  const ttl = lifetimes(deps).inviteSeconds;
  const { token, record } = await access.account.tokens.issue({ purpose: 'tenant_invite', email, tenantId: tenant.id, createdBy: inviter.id }, ttl);
  const invitedBy = inviter.name ? `${inviter.name} (${inviter.email})` : inviter.email;
  await deps.mailer.send(inviteMail(input.email.trim(), linkWith(input.linkBase, token, email), ttl, invitedBy, tenant.name));
  return inviteOf(record);
}

/** The tenant's pending invites, newest first, for its members (404 `tenant_not_found` for others). */
export async function listInvites(deps: AccountTokenDeps, caller: SignedInUser, input: { databaseId: string; tenantId: string }): Promise<TenantInvite[]> {
  const access = await memberAccess(deps, caller, input.databaseId, input.tenantId);
  return (await access.account.tokens.listLive('tenant_invite', input.tenantId)).map(inviteOf);
}

/** A member revokes a pending invite of the tenant: its link stops working. 404 `invite_not_found` when there is none pending. */
export async function revokeInvite(deps: AccountTokenDeps, caller: SignedInUser, input: { databaseId: string; tenantId: string; inviteId: string }): Promise<void> {
  const access = await memberAccess(deps, caller, input.databaseId, input.tenantId);
  if (!(await access.account.tokens.revoke(input.inviteId, 'tenant_invite', input.tenantId))) {
    throw new NotFoundError('invite_not_found', `Invite '${input.inviteId}' not found`);
  }
}

/**
 * What an invite link offers, read only (its landing page shows it before the invitee accepts):
 * the address and the tenant's name. A token that would not be accepted is 400
 * `invalid_one_time_token`.
 */
export async function previewInvite(deps: AccountTokenDeps, input: { databaseId: string; tenantId: string; token: string; email: string }): Promise<{ email: string; tenantName: string | null }> {
  const access = await findTokenDatabase(deps, input.databaseId);
  const invite = access && (await access.account.tokens.find(input.token, { purpose: 'tenant_invite', tenantId: input.tenantId, email: foldEmail(input.email) }));
  const tenant = access && invite?.tenantId ? await access.data.tenants.find(invite.tenantId) : null;
  if (!invite || !tenant) throw invalidToken();
  return { email: invite.email, tenantName: tenant.name };
}

export interface AcceptInviteInput {
  databaseId: string;
  token: string;
  /** When given, the invite must be to this tenant. */
  tenantId?: string;
  /** When given, the invite must be to this address. */
  email?: string;
  /** For an address without an account: the new account's password; without one, it has none yet. */
  password?: string;
  name?: string;
  /** The client's address: its share of the hashing queue. */
  clientAddress?: string;
}

/**
 * Accepts an invite with the token of its mail. The address's existing account is added to the
 * tenant; an address without one gets a new account, with `password` when given (400
 * `invalid_password` when it breaks the rules, the invite left pending), else with no password
 * (the API family's SDK sends none: the invitee sets one through a reset, or signs in another
 * way). Either way the address counts as verified: the token proves its inbox. A token used,
 * expired, revoked, not an invite, for another tenant or address, or to a tenant deleted since, is
 * 400 `invalid_one_time_token`. Answers the user, whether the account is new, and the tenant; the
 * caller may sign them in.
 */
export async function acceptInvite(deps: AccountTokenDeps, input: AcceptInviteInput): Promise<{ user: User; created: boolean; tenantId: string }> {
  const access = await requireTokenDatabase(deps, input.databaseId);
  const expect = {
    purpose: 'tenant_invite' as const,
    ...(input.tenantId !== undefined ? { tenantId: input.tenantId } : {}),
    ...(input.email !== undefined ? { email: foldEmail(input.email) } : {}),
  };
  const invite = await access.account.tokens.find(input.token, expect);
  if (!invite?.tenantId || !(await access.data.tenants.find(invite.tenantId))) throw invalidToken();
  const existing = await access.data.users.findByEmail(invite.email);
  let passwordHash: string | null = null;
  if (!existing && input.password !== undefined) {
    assertPassword(input.password);
    const claim = newUserClaim({ workspaceSlug: access.database.workspace.slug, databaseName: access.database.name }, invite.email, input.clientAddress);
    passwordHash = await hashPassword(deps.hasher, claim, input.password);
  }
  const name = cleanPersonName(input.name);
  if (!(await access.account.tokens.consume(input.token, expect))) throw invalidToken();
  const { user, created } = await joinTenant(access, { email: invite.email, name, passwordHash }, invite.tenantId, existing);
  await access.account.secrets.markEmailVerified(user.id, invite.email);
  return { user: (await access.data.users.find(user.id)) ?? user, created, tenantId: invite.tenantId };
}

async function joinTenant(
  access: TokenDatabase,
  account: { email: string; name: string | null; passwordHash: string | null },
  tenantId: string,
  existing: User | null,
): Promise<{ user: User; created: boolean }> {
  if (!existing) {
    try {
      const { email, name, passwordHash } = account;
      const user =
        passwordHash === null
          ? await access.account.secrets.createInvitedUser({ email, name }, tenantId)
          : await access.data.users.create({ email, passwordHash, name }, tenantId);
      return { user, created: true };
    } catch (error) {
      // Signed up a moment ago by other means: the token proves the inbox, so that account joins.
      if (!(error instanceof ConflictError)) throw error;
      existing = await access.data.users.findByEmail(account.email);
      if (!existing) throw error;
    }
  }
  await access.data.users.link(tenantId, existing.id);
  return { user: existing, created: false };
}

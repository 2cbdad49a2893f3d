import type { Database, Tenant, User } from './model.js';
import type { Page, PageRequest } from './paging.js';

/** Tenants of one platform database. */

/** Who reads a tenant's members: one of its members, or a caller who may see every tenant. */
export type MemberReader = 'tenant' | 'administration';
export interface TenantRepository {
  /** ConflictError `tenant_id_taken` when the id is in use. */
  create(input: { id?: string; name: string | null }): Promise<Tenant>;
  list(): Promise<Tenant[]>;
  /** A page of the live tenants, oldest first; invalid_cursor when the cursor's tenant never existed. */
  listPage(page: PageRequest): Promise<Page<Tenant>>;
  /**
   * The tenants a user belongs to, in one round trip that also checks the user's session: a
   * revoked session or a removed membership takes effect at once.
   */
  listForUser(userId: string, sessionId: string): Promise<{ sessionValid: boolean; tenants: Tenant[] }>;
  find(id: string): Promise<Tenant | null>;
  rename(id: string, name: string | null): Promise<Tenant | null>;
  /** Soft-deletes the tenant and removes its memberships; false when there was none. */
  delete(id: string): Promise<boolean>;
}

export interface UserPatch {
  name?: string | null;
  givenName?: string | null;
  familyName?: string | null;
  picture?: string | null;
}

export interface NewUser extends UserPatch {
  email: string;
  passwordHash: string;
}

/** An account at an OpenID Provider: unique per issuer. */
export interface ExternalIdentity {
  issuer: string;
  subject: string;
}

/** A user who signs in through an OpenID Provider only: no password. */
export interface NewIdentityUser extends UserPatch {
  email: string;
  emailVerified: Date;
}

/** Users of one platform database and their tenant memberships. */
export interface UserRepository {
  /** Creates the user with a password (and membership, when given) at once; ConflictError `email_taken`. */
  create(input: NewUser, tenantId?: string): Promise<User>;
  find(id: string): Promise<User | null>;
  /** The live user with this email (case-insensitive), however they sign in. */
  findByEmail(email: string): Promise<User | null>;
  /** The live user an identity at an OpenID Provider is linked to. */
  findByIdentity(identity: ExternalIdentity): Promise<User | null>;
  /** Creates the user, linked to the identity, as a member of the tenant; ConflictError `email_taken`. */
  createWithIdentity(input: NewIdentityUser, identity: ExternalIdentity, tenantId: string): Promise<User>;
  /** Links the identity to the user; ConflictError `identity_taken` when another live user has it. */
  linkIdentity(userId: string, identity: ExternalIdentity): Promise<void>;
  /** For password login only: the user and their password hash, by email (case-insensitive). */
  findCredentials(email: string): Promise<{ user: User; passwordHash: string } | null>;
  update(id: string, patch: UserPatch): Promise<User | null>;
  listMembers(tenantId: string): Promise<User[]>;
  /**
   * A page of the tenant's members, oldest first; invalid_cursor when the cursor's user never existed.
   * `as`: 'tenant' reads in the tenant's context, under row-level security as well as the filter;
   * 'administration' is for callers who may see every tenant, and skips what that costs.
   */
  listMembersPage(tenantId: string, page: PageRequest, as: MemberReader): Promise<Page<User>>;
  tenantIds(userId: string): Promise<string[]>;
  /** Adds the membership; false when it already existed. */
  link(tenantId: string, userId: string): Promise<boolean>;
  /** Removes the membership; false when there was none. */
  unlink(tenantId: string, userId: string): Promise<boolean>;
  /**
   * Deletes the user (their row is kept, marked deleted, so their email is free again): their
   * memberships go and every session of theirs ends at once. False when there was no live user.
   */
  delete(id: string): Promise<boolean>;
  /** Whether the two users share at least one tenant. */
  shareTenant(userId: string, otherUserId: string): Promise<boolean>;
  /**
   * In one round trip: whether the session is live for the user, and whether the user belongs
   * to the tenant.
   */
  access(userId: string, sessionId: string, tenantId: string): Promise<{ sessionValid: boolean; member: boolean }>;
}

/** Server-side sessions; the cookie carries a random token, the database only its digest. */
export interface SessionRepository {
  create(userId: string, ttlSeconds: number): Promise<{ id: string; token: string; expires: Date }>;
  /** The live session a cookie token belongs to, with when it expires. */
  findByToken(token: string): Promise<{ id: string; userId: string; expires: Date } | null>;
  isLive(id: string, userId: string): Promise<boolean>;
  revoke(id: string): Promise<void>;
}

export interface DataPlaneRepositories {
  tenants: TenantRepository;
  users: UserRepository;
  sessions: SessionRepository;
}

/** Reaches the built-in tables inside each platform database. */
export interface DataPlane {
  open(database: Database): DataPlaneRepositories;
}

/** Finds a database without a developer (for user tokens and sign-in), possibly from a cache. */
export interface DatabaseLocator {
  findBySlugAndName(workspaceSlug: string, name: string): Promise<Database | null>;
  findById(id: string): Promise<Database | null>;
}

export type { PasswordHasher, PasswordHashing } from './password-hashing.js';

export interface UserTokenIssuer {
  issue(input: { userId: string; databaseId: string; sessionId: string }): Promise<{ jwt: string; maxAge: number }>;
}

/**
 * The session setting that carries the current tenant into a platform database, for sessions
 * that are not bound to a tenant (the platform's own, unscoped credentials). Row-level security
 * on every table with a `tenant_id` column compares against `platform.current_tenant_id()`: the
 * tenant a scoped credential is bound to, else the tenant context. The API's own sessions (its
 * `<db>_tenant` role) read this setting only, and unset means no rows (built-in schema step 4);
 * an unscoped credential's context is this setting or TENANT_CONTEXT_ALIAS, and unset means every
 * tenant's rows (step 12). The platform sets it per transaction (`set_config(name, id, true)`,
 * i.e. SET LOCAL).
 */
export const TENANT_CONTEXT_SETTING = 'platform.tenant_id';

/** The name the API family's clients give the tenant context: the same context as TENANT_CONTEXT_SETTING for credentials. */
export const TENANT_CONTEXT_ALIAS = 'nile.tenant_id';

/** The API family's user context: when set beside a tenant context, the user must be a member of that tenant. */
export const USER_CONTEXT_SETTING = 'nile.user_id';

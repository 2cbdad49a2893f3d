import type { ClusterActivity } from './insights/observer.js';
import type { CredentialRepository } from './credential-ports.js';
import type { DatabaseStatus } from './database-status.js';
import type { Database, DatabaseSource, Developer, OAuthClient, OAuthClientType, Principal, Workspace } from './model.js';
import type { Page, PageRequest } from './paging.js';
import type { Region } from './regions.js';

export interface DeveloperRepository {
  findByEmail(email: string): Promise<Developer | null>;
  findById(id: string): Promise<Developer | null>;
  /** Creates the developer, or returns the existing one with that email. */
  ensure(input: { email: string; name: string | null }): Promise<Developer>;
  /** A new account with a password; ConflictError when the email (case-insensitively) is taken. */
  createWithPassword(input: { email: string; name: string | null; passwordHash: string }): Promise<Developer>;
  /** For sign-in: the developer and their password hash (null when they have none). */
  findCredentials(email: string): Promise<{ developer: Developer; passwordHash: string | null } | null>;
  setPasswordHash(id: string, passwordHash: string): Promise<void>;
}

/** Owners manage the workspace's members; members use the workspace. */
export type WorkspaceRole = 'owner' | 'member';

/** A developer's membership of a workspace, with what the member list shows of the developer. */
export interface WorkspaceMember {
  developerId: string;
  email: string;
  name: string | null;
  role: WorkspaceRole;
  /** When the developer joined the workspace. */
  added: Date;
}

/** Changes to one workspace's members, made while holding its membership lock (see `editMembers`). */
export interface WorkspaceMemberEditor {
  add(developerId: string, role: WorkspaceRole): Promise<WorkspaceMember>;
  setRole(developerId: string, role: WorkspaceRole): Promise<WorkspaceMember>;
  remove(developerId: string): Promise<void>;
  /**
   * Deletes and answers this workspace's invitation `id` when it is for `email` (case-insensitively)
   * and unexpired at `now`; null otherwise. In the same transaction as `add`, so an invitation is
   * spent exactly when its invitee joins.
   */
  takeInvitation(id: string, email: string, now: Date): Promise<WorkspaceInvitation | null>;
}

/**
 * An owner's invitation of an email to a workspace, pending until its invitee (the developer
 * with that email) accepts or declines it, an owner revokes it, or it expires.
 */
export interface WorkspaceInvitation {
  id: string;
  workspace: Pick<Workspace, 'id' | 'name' | 'slug'>;
  /** As the owner typed it; matched case-insensitively. */
  email: string;
  /**
   * What the invitee becomes on accepting: always `member` (INVITED_ROLE). Emails are not
   * verified, so whoever registered an email would get what its invitation grants.
   */
  role: WorkspaceRole;
  created: Date;
  expires: Date;
}

/** Pending invitations. Every read takes `now`: an expired invitation is found by none of them. */
export interface WorkspaceInvitationRepository {
  /**
   * Invites `email`, replacing a pending (or expired) invitation of the same email to the same
   * workspace, so an owner who invites again gets a fresh invitation and the old one stops working.
   * Null, and nothing changed, when the workspace already has `maxPending` pending invitations of
   * other emails: counted and written under the workspace's lock, so concurrent invitations at the
   * cap cannot both pass.
   */
  create(input: { workspaceId: string; email: string; role: WorkspaceRole; invitedBy: string; created: Date; expires: Date; maxPending: number }): Promise<WorkspaceInvitation | null>;
  listForWorkspace(workspaceId: string, now: Date): Promise<WorkspaceInvitation[]>;
  /** A page of the invitations for an email, case-insensitively, across workspaces, in (created, id) order. */
  listForEmail(email: string, now: Date, page: PageRequest): Promise<Page<WorkspaceInvitation>>;
  findForEmail(id: string, email: string, now: Date): Promise<WorkspaceInvitation | null>;
  /** Deletes the workspace's invitation; false when it has none by that id (or it expired). */
  revoke(workspaceId: string, id: string, now: Date): Promise<boolean>;
  /** Deletes the invitation when it is for `email`; false otherwise. */
  decline(id: string, email: string, now: Date): Promise<boolean>;
}

export interface WorkspaceRepository {
  /** Creates the workspace with its owner as first member; ConflictError when the slug is taken. */
  create(input: { name: string; slug: string; ownerId: string }): Promise<Workspace>;
  listForDeveloper(developerId: string): Promise<Workspace[]>;
  /** The workspace only if the developer belongs to it. */
  findBySlugForDeveloper(slug: string, developerId: string): Promise<Workspace | null>;
  findById(id: string): Promise<Workspace | null>;
  /** The workspace of a client that has not been deleted. */
  findForLiveClient(clientId: string): Promise<Workspace | null>;
  /** The workspace's members, earliest first. */
  listMembers(workspaceId: string): Promise<WorkspaceMember[]>;
  /**
   * Runs `edit` in one transaction that holds the workspace's membership lock, given the members
   * as they are under that lock, so decisions such as "is this the last owner" cannot race.
   * Nothing `edit` changed persists when it throws; NotFoundError when the workspace is gone.
   */
  editMembers<T>(workspaceId: string, edit: (members: WorkspaceMember[], editor: WorkspaceMemberEditor) => Promise<T>): Promise<T>;
}

export interface DatabaseRepository {
  /** Persists a new database in REQUESTED; ConflictError when the name is taken in the workspace. */
  create(input: { id: string; workspace: Workspace; name: string; region: Region; source?: DatabaseSource }): Promise<Database>;
  /**
   * A page of the workspace's live databases in (created, id) order, after the database the
   * request's cursor names (a keyset query: as cheap on the last page as on the first). 400
   * invalid_cursor for a cursor that names no database of the workspace.
   */
  listLivePage(workspace: Workspace, page: PageRequest): Promise<Page<Database>>;
  findLiveByName(workspace: Workspace, name: string): Promise<Database | null>;
  /** A live database of the workspace by its id (the insights path names databases by id). */
  findLiveById(workspace: Workspace, id: string): Promise<Database | null>;
  /** ConflictError when another live database of the workspace has the name. */
  rename(database: Database, name: string): Promise<Database>;
  /**
   * Marks a live database deleted at `deleted`, restorable until `purgeAfter`: its name is free at
   * once. The database as it is now, or null when it was no longer live (deleted meanwhile).
   */
  markDeleted(database: Database, when: { deleted: Date; purgeAfter: Date }): Promise<Database | null>;
  /**
   * A page of the workspace's deleted databases still restorable at `now` (purgeAfter later, not
   * dropped), paged as listLivePage.
   */
  listDeletedPage(workspace: Workspace, page: PageRequest, now: Date): Promise<Page<Database>>;
  /**
   * Makes a deleted database of the workspace live again, under `name` when given, if it is still
   * restorable at `now`; null when there is none such (unknown, live, purged or past its retention).
   * ConflictError database_name_taken when a live database of the workspace has the name.
   */
  restore(workspace: Workspace, id: string, input: { name?: string; now: Date }): Promise<Database | null>;
  /**
   * Ends the retention of a deleted database of the workspace still restorable at `now`: from `now`
   * on it is due to be dropped. The database as it was, or null when there is none such.
   */
  endRetention(workspace: Workspace, id: string, now: Date): Promise<Database | null>;
}

/**
 * What a provisioner is asked to do with a claimed database: advance a live one's provisioning;
 * close a deleted one (it refuses connections, its sessions end); reopen a restored one; drop one
 * whose retention has ended (purge).
 */
export type ProvisioningTask =
  /** `source`: for a restore or branch (database.source set), the database its data comes from. */
  | { kind: 'advance'; database: Database; to: DatabaseStatus; source?: Database }
  | { kind: 'close'; database: Database }
  | { kind: 'reopen'; database: Database }
  | { kind: 'drop'; database: Database };

/**
 * The control-plane side of provisioning. `claim` locks one database that needs work (skipping
 * rows other workers hold), runs `work` while holding the lock, and persists the outcome in the
 * same transaction; when `work` throws, nothing is persisted but the error and a retry time.
 */
export interface ProvisioningStore {
  claim(work: (task: ProvisioningTask) => Promise<void>, options?: { databaseId?: string }): Promise<boolean>;
}

/**
 * Point-in-time copies of databases from their cluster's backups (README, "Point-in-time restore
 * and branches"): what the API checks a request against, and the provisioner's first step for a
 * restored or branched database.
 */
/**
 * A copy that no attempt can make (its instant has left the backups' reach, or the source's data
 * was on another server then): the provisioner records it as the database's failure and stops.
 * Anything else a copy throws is tried again.
 */
export class CopyImpossibleError extends Error {
  override readonly name = 'CopyImpossibleError';
}

export interface DatabaseCopier {
  /**
   * The earliest instant the backups of the cluster holding `source` can restore (null: none yet,
   * no backup precedes the archived WAL); any later instant up to now can be. Null when that
   * cluster's backups are not configured on this platform.
   */
  restorableFrom(source: Database): Promise<{ from: Date | null } | null>;
  /**
   * Makes `target`'s PostgreSQL database hold `source`'s data as of `at`, with the target's own
   * roles and no credential. Starts over from nothing on every call (an earlier attempt's leftovers
   * are removed first), so an interrupted copy is simply run again. CopyImpossibleError when no
   * attempt can succeed.
   */
  copy(input: { source: Database; at: Date; target: Database }): Promise<void>;
  /** Removes what an interrupted copy into `target` left besides its database (its scratch server and folder). */
  discard(target: Database): Promise<void>;
}

/** One PostgreSQL cluster. Every operation is idempotent, so an interrupted step can be re-run. */
export interface ClusterDriver {
  createDatabase(physicalName: string): Promise<void>;
  installBuiltInSchema(physicalName: string): Promise<void>;
  /** Brings a READY database's built-in schema (and the platform's own login to it) up to date. */
  upgradeBuiltInSchema(physicalName: string): Promise<void>;
  /** Connects to the database and checks that its built-in schema is current. */
  verifyDatabase(physicalName: string): Promise<void>;
  /** The database refuses every new connection, its own login's too, and its open sessions end; nothing to do when it does not exist. */
  closeDatabase(physicalName: string): Promise<void>;
  /** The database accepts connections again (undoes closeDatabase); nothing to do when it does not exist. */
  reopenDatabase(physicalName: string): Promise<void>;
  /** Drops the database and the login roles of its credentials. */
  dropDatabase(physicalName: string): Promise<void>;
  listDatabases(prefix: string): Promise<string[]>;
  /** A postgres:// URL without credentials that reaches the database. */
  connectionUrl(physicalName: string): string;
  /** What the cluster is doing now, per database (query insights' observer). */
  activity(): Promise<ClusterActivity>;
  /**
   * Defence in depth: takes from the roles made for customers (one database's, or every platform
   * database's) any attribute or membership they may not hold, and answers what it took.
   */
  auditCustomerRoles(physicalName?: string): Promise<CustomerRoleRepair[]>;
  close(): Promise<void>;
}

/** A role made for a customer that held more than it may, and what was taken from it. */
export interface CustomerRoleRepair {
  role: string;
  removed: string[];
}

export interface ClusterDirectory {
  regions(): readonly Region[];
  /** The cluster for a served region; UnavailableError for one the platform does not serve. */
  forRegion(region: Region): ClusterDriver;
  /** The server that holds the database now: its region's cluster, or its dedicated instance's server. */
  forDatabase(database: Pick<Database, 'region' | 'instanceId' | 'server'>): ClusterDriver;
}

/** Free space where one PostgreSQL server keeps its data, as readiness reports it. */
export interface DiskSpace {
  /** What the server is to the platform: `control plane`, and the regions whose cluster it is. */
  servers: string[];
  /** Bytes free to the server; null when they cannot be seen from here (see `unknown`). */
  freeBytes: number | null;
  totalBytes: number | null;
  /** Free space is under the warning threshold. */
  low: boolean;
  /** Why the figures are null: a server on another machine, one that does not answer. */
  unknown?: string;
}

/** The WAL archiving and base backups of one PostgreSQL server, as readiness reports them (README, "Backups"). */
export interface BackupHealth {
  /** What the server is to the platform: `control plane`, and the regions whose cluster it is. */
  servers: string[];
  /**
   * `off`: the server archives no WAL; `ok`; `failing`: its newest attempt to archive failed (the WAL
   * waits on its disk, up to the queue limit, past which it is dropped); `unknown`: it did not answer.
   */
  archiving: 'off' | 'ok' | 'failing' | 'unknown';
  lastArchivedAt: Date | null;
  lastFailedAt: Date | null;
  /** Failed attempts since the server's statistics were last reset; null when unknown. */
  failedCount: number | null;
  /** Whether this API takes the server's base backups (the server's backup configuration is on this machine). */
  managed: boolean;
  /** The newest base backup; null when there is none, or the server's backups are not managed here. */
  lastBackup: { type: 'full' | 'diff' | 'incr'; finishedAt: Date } | null;
  /** The earliest instant a point-in-time restore reaches; null when none does (no backup yet, or none since a gap). */
  restorableFrom: Date | null;
  /** WAL is missing after the oldest backup kept (dropped past the queue limit): instants before the gap cannot be restored. */
  walGap: boolean;
  /** Why figures are missing: the server does not answer, or its backups could not be read. */
  unknown?: string;
}

/** Wakes whatever moves databases toward their desired state (the provisioner's DatabaseReconciler). */
export interface Provisioner {
  nudge(): void;
  /**
   * Does the work one database needs now (closing a deleted one, reopening a restored one, dropping
   * a purged one), so that the request that asked for it answers after it; a failure is left to the
   * retrying loop, never thrown.
   */
  settleNow(databaseId: string): Promise<void>;
}

export interface TokenVerifier {
  /** The principal of a valid bearer token; UnauthenticatedError otherwise. */
  verify(token: string): Promise<Principal>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Seals secrets kept at rest (SSO client secrets, signing keys' private halves) under a key ring;
 * `context` binds a sealed secret to its row, so one copied into another row does not open.
 */
export interface SecretSealer {
  seal(plaintext: string, context: string): string;
  /** The plaintext; throws when the ring lacks the key it was sealed with, the context differs or it was altered. */
  open(sealed: string, context: string): string;
  /** Whether the secret was sealed with a key other than the current one (key rotation). */
  needsResealing(sealed: string): boolean;
}

/** A key of the platform's signing key set, as JSON Web Keys. */
export interface SigningKeyRecord {
  kid: string;
  alg: string;
  publicJwk: Record<string, unknown>;
  created: Date;
  /** From then on the key no longer signs. */
  retires: Date | null;
  /** From then on the key no longer verifies. */
  expires: Date | null;
}

/**
 * A signing key's private half as the control plane keeps it: sealed (a SecretSealer's text, the
 * key's kid as context), or a plain JWK that a release from before sealing wrote and no replica
 * with a key ring has sealed yet.
 */
export type StoredPrivateKey = { sealed: string } | { plain: Record<string, unknown> };

export interface SigningKeyRepository {
  /** Keys that still verify at `now`, newest first. */
  listVerifying(now: Date): Promise<SigningKeyRecord[]>;
  /** The newest key created by `createdBy` that still signs at `now`, with its private half. */
  findSigning(now: Date, createdBy: Date): Promise<(SigningKeyRecord & { privateKey: StoredPrivateKey }) | null>;
  insert(record: SigningKeyRecord & { sealedPrivateKey: string }): Promise<void>;
  /** Every key but `kid` stops signing at `retires` (if not sooner) and verifying at `expires`. */
  retireAllExcept(kid: string, retires: Date, expires: Date): Promise<void>;
  /** Every key's private half, expired keys' included: what sealing at start-up goes through. */
  listPrivateKeys(): Promise<{ kid: string; privateKey: StoredPrivateKey }[]>;
  /**
   * Keeps `sealed` as the key's private half, and no plain copy, unless the half changed since it
   * was read as `from` (another replica sealed it first). Whether this call replaced it.
   */
  replacePrivateKey(kid: string, from: StoredPrivateKey, sealed: string): Promise<boolean>;
  /**
   * Runs `work` with a repository whose reads and writes are one transaction holding the key set's
   * lock: of replicas doing it at once, each waits for the one before and sees what it did.
   */
  exclusively<T>(work: (locked: SigningKeyRepository) => Promise<T>): Promise<T>;
}

export interface OAuthClientRepository {
  create(input: { id: string; workspaceId: string; name: string; type: OAuthClientType; secretDigest: string | null; redirectUris: string[]; createdBy: string }): Promise<OAuthClient>;
  listForWorkspace(workspaceId: string): Promise<OAuthClient[]>;
  find(workspaceId: string, id: string): Promise<OAuthClient | null>;
  /** For the token endpoint: a live client by id, with its secret's digest. */
  findForAuthentication(id: string): Promise<{ client: OAuthClient; secretDigest: string | null } | null>;
  setSecretDigest(workspaceId: string, id: string, digest: string): Promise<boolean>;
  /** Soft-deletes the client and revokes every refresh-token family issued to it. */
  delete(workspaceId: string, id: string): Promise<boolean>;
}

/** The repositories of one unit of work (one request): they share one identity map. */
export interface Repositories {
  developers: DeveloperRepository;
  workspaces: WorkspaceRepository;
  invitations: WorkspaceInvitationRepository;
  databases: DatabaseRepository;
  clients: OAuthClientRepository;
  credentials: CredentialRepository;
}

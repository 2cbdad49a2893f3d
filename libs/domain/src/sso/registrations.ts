import { randomUUID } from 'node:crypto';
import { requireManagement } from '../authorization.js';
import { ConflictError, NotFoundError, UnavailableError, ValidationError } from '../errors.js';
import type { Principal } from '../model.js';
import type { DatabasePath, TenantPath } from '../paths.js';
import { accessDatabase, accessTenant, type DataPlaneDeps } from '../use-cases/database-access.js';
import type { SecretSealer } from '../ports.js';
import type { OidcRelyingParty, SsoRegistration, SsoRegistrationRepository } from './sso-ports.js';

export interface SsoDeps extends DataPlaneDeps {
  ssoRegistrations: SsoRegistrationRepository;
  relyingParty: OidcRelyingParty;
  /** null when the platform has no SSO_SECRET_KEYS: nothing can be registered. */
  ssoSecrets: SecretSealer | null;
}

/** What a registration request may set; on update every field is optional. */
export interface SsoRegistrationInput {
  configUrl: string;
  clientId: string;
  clientSecret: string;
  emailDomains: string[];
  enabled?: boolean;
  redirectUri: string;
  jitProvisioning?: boolean;
}

/** A provider's name: what the path carries, and what its login URL shows. */
const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** A DNS name of at least two labels (`example.com`), letters in lower case once normalised. */
const EMAIL_DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_EMAIL_DOMAINS = 50;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export function unknownProvider(name: string): NotFoundError {
  return new NotFoundError('unknown_oidc_provider', `No SSO provider '${name}' is registered for this tenant`);
}

function secretsOf(deps: SsoDeps): SecretSealer {
  if (!deps.ssoSecrets) {
    throw new UnavailableError('sso_not_configured', 'Single sign-on needs SSO_SECRET_KEYS: the platform has no key to keep client secrets with');
  }
  return deps.ssoSecrets;
}

/**
 * A registration's client secret in plain text. One sealed with a key since dropped from the ring
 * cannot be read: the registration needs its secret again (PUT with clientSecret).
 */
export function openClientSecret(deps: SsoDeps, registration: SsoRegistration): string {
  const secrets = secretsOf(deps);
  try {
    return secrets.open(registration.sealedSecret, registration.id);
  } catch (error) {
    throw new UnavailableError(
      'client_secret_unreadable',
      `The client secret of SSO provider '${registration.provider}' was sealed with a key no longer in SSO_SECRET_KEYS: register it again with PUT and clientSecret`,
      { cause: error },
    );
  }
}

function assertProviderName(name: string): void {
  if (!PROVIDER_NAME.test(name)) {
    throw new ValidationError('invalid_provider_name', 'A provider name is 1 to 63 letters, digits, dots, dashes or underscores, starting with a letter or digit');
  }
}

/** Lower-cased and deduplicated, in the order given; at least one. */
export function normaliseEmailDomains(domains: readonly string[]): string[] {
  const normalised = [...new Set(domains.map((domain) => domain.trim().toLowerCase()))];
  if (normalised.length > MAX_EMAIL_DOMAINS) throw new ValidationError('invalid_email_domains', `emailDomains holds at most ${MAX_EMAIL_DOMAINS} domains`);
  if (normalised.length === 0) throw new ValidationError('invalid_email_domains', 'emailDomains needs at least one domain: only emails in them may sign in');
  const invalid = normalised.find((domain) => !EMAIL_DOMAIN.test(domain));
  if (invalid !== undefined) throw new ValidationError('invalid_email_domains', `'${invalid}' is not a domain name (example.com)`);
  return normalised;
}

/**
 * The address the callback page posts tokens to: https, or http to this machine (an app in
 * development); absolute, without credentials or fragment.
 */
export function assertRedirectUri(text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ValidationError('invalid_redirect_uri', 'redirectURI must be an absolute URL');
  }
  const loopbackHttp = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp) throw new ValidationError('invalid_redirect_uri', 'redirectURI must be https (or http to localhost)');
  if (url.username || url.password || url.hash) throw new ValidationError('invalid_redirect_uri', 'redirectURI must carry no credentials and no fragment');
}

async function tenantForManagement(deps: SsoDeps, caller: Principal, path: TenantPath) {
  const access = await accessTenant(deps, caller, path);
  requireManagement(caller, 'Only a developer can manage a tenant’s single sign-on: its settings decide where users’ tokens are sent');
  return access;
}

/** Registers a provider for the tenant after checking its discovery document (SPEC POST T/auth/oidc/providers/{name}). */
export async function registerSsoProvider(deps: SsoDeps, caller: Principal, path: TenantPath, provider: string, input: SsoRegistrationInput): Promise<SsoRegistration> {
  const { database, tenant } = await tenantForManagement(deps, caller, path);
  assertProviderName(provider);
  const emailDomains = normaliseEmailDomains(input.emailDomains);
  assertRedirectUri(input.redirectUri);
  const secrets = secretsOf(deps);
  if (await deps.ssoRegistrations.find(database.id, tenant.id, provider)) throw providerExists(provider);
  const metadata = await deps.relyingParty.discover(input.configUrl);
  const id = randomUUID();
  return deps.ssoRegistrations.create({
    id,
    databaseId: database.id,
    tenantId: tenant.id,
    provider,
    configUrl: input.configUrl,
    metadata,
    clientId: input.clientId,
    sealedSecret: secrets.seal(input.clientSecret, id),
    emailDomains,
    enabled: input.enabled ?? true,
    redirectUri: input.redirectUri,
    jitProvisioning: input.jitProvisioning ?? true,
  });
}

export function providerExists(provider: string): ConflictError {
  return new ConflictError('provider_already_exists', `SSO provider '${provider}' already exists for this tenant`);
}

/**
 * Overwrites what the request gives and keeps the rest (SPEC PUT). A given configUrl has its
 * discovery document fetched and checked again (502 as on registration); a different one is another
 * provider, so its clientSecret must come with it: the old secret is never sent to a new token
 * endpoint. Without configUrl nothing is fetched, so a provider can be disabled while it is down.
 */
export async function updateSsoProvider(
  deps: SsoDeps,
  caller: Principal,
  path: TenantPath,
  provider: string,
  input: Partial<SsoRegistrationInput>,
): Promise<SsoRegistration> {
  const { database, tenant } = await tenantForManagement(deps, caller, path);
  const existing = await deps.ssoRegistrations.find(database.id, tenant.id, provider);
  if (!existing) throw unknownProvider(provider);
  if (input.redirectUri !== undefined) assertRedirectUri(input.redirectUri);
  const emailDomains = input.emailDomains ? normaliseEmailDomains(input.emailDomains) : existing.emailDomains;
  if (input.configUrl !== undefined && input.configUrl !== existing.configUrl && input.clientSecret === undefined) {
    throw new ValidationError('client_secret_required', 'A new configUrl names another provider: send its clientSecret (and clientId) with it');
  }
  const sealedSecret = input.clientSecret === undefined ? existing.sealedSecret : secretsOf(deps).seal(input.clientSecret, existing.id);
  const metadata = input.configUrl === undefined ? existing.metadata : await deps.relyingParty.discover(input.configUrl);
  const updated = await deps.ssoRegistrations.update({
    ...existing,
    configUrl: input.configUrl ?? existing.configUrl,
    metadata,
    clientId: input.clientId ?? existing.clientId,
    sealedSecret,
    emailDomains,
    enabled: input.enabled ?? existing.enabled,
    redirectUri: input.redirectUri ?? existing.redirectUri,
    jitProvisioning: input.jitProvisioning ?? existing.jitProvisioning,
  });
  if (!updated) throw unknownProvider(provider);
  return updated;
}

export async function getSsoProvider(deps: SsoDeps, caller: Principal, path: TenantPath, provider: string): Promise<SsoRegistration> {
  const { database, tenant } = await tenantForManagement(deps, caller, path);
  const found = await deps.ssoRegistrations.find(database.id, tenant.id, provider);
  if (!found) throw unknownProvider(provider);
  return found;
}

export async function listTenantSsoProviders(deps: SsoDeps, caller: Principal, path: TenantPath): Promise<SsoRegistration[]> {
  const { database, tenant } = await tenantForManagement(deps, caller, path);
  return deps.ssoRegistrations.listForTenant(database.id, tenant.id);
}

export async function deleteSsoProvider(deps: SsoDeps, caller: Principal, path: TenantPath, provider: string): Promise<void> {
  const { database, tenant } = await tenantForManagement(deps, caller, path);
  if (!(await deps.ssoRegistrations.delete(database.id, tenant.id, provider))) throw unknownProvider(provider);
}

/** The domain of an email (after its last @), lower-cased; null when it has none. */
export function emailDomainOf(email: string): string | null {
  const at = email.lastIndexOf('@');
  const domain = at < 0 ? '' : email.slice(at + 1).trim().toLowerCase();
  return domain === '' ? null : domain;
}

export interface SsoFilter {
  provider?: string;
  /** Matches registrations whose emailDomains hold the email's domain. */
  email?: string;
}

/** Registrations of live tenants that pass the filter. */
export async function filteredRegistrations(deps: SsoDeps, databaseId: string, liveTenantIds: Set<string>, filter: SsoFilter) {
  const domain = filter.email === undefined ? undefined : emailDomainOf(filter.email);
  return (await deps.ssoRegistrations.listForDatabase(databaseId)).filter(
    (registration) =>
      liveTenantIds.has(registration.tenantId) &&
      (filter.provider === undefined || registration.provider === filter.provider) &&
      (domain === undefined || (domain !== null && registration.emailDomains.includes(domain))),
  );
}

/** Every tenant's providers in the database (SPEC GET D/tenants/auth/oidc/providers): developers only. */
export async function listDatabaseSsoProviders(deps: SsoDeps, caller: Principal, path: DatabasePath, filter: SsoFilter): Promise<SsoRegistration[]> {
  const { database, data } = await accessDatabase(deps, caller, path);
  requireManagement(caller, 'Only a developer can list the tenants’ single sign-on providers');
  const tenants = new Set((await data.tenants.list()).map((tenant) => tenant.id));
  return filteredRegistrations(deps, database.id, tenants, filter);
}

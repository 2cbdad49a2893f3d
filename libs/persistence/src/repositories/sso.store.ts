import { createHash } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import {
  ConflictError,
  type NewSsoRegistration,
  type PendingSsoLogin,
  type ProviderMetadata,
  type SpentSsoStateStore,
  type SsoLoginStateStore,
  type SsoRegistration,
  type SsoRegistrationRepository,
} from '@platform/domain';
import { isUniqueViolation } from '../errors.js';

interface RegistrationRow {
  id: string;
  database_id: string;
  tenant_id: string;
  provider: string;
  config_url: string;
  metadata: ProviderMetadata | string;
  client_id: string;
  sealed_secret: string;
  email_domains: string[];
  enabled: boolean;
  redirect_uri: string;
  jit_provisioning: boolean;
  created: Date | string;
  updated: Date | string;
}

/** A text[] from a JSON array parameter (the driver would spread a JavaScript array into many parameters). */
const TEXT_ARRAY = `array(select jsonb_array_elements_text(?::jsonb))`;

const COLUMNS = `id, database_id, tenant_id, provider, config_url, metadata, client_id, sealed_secret, email_domains,
  enabled, redirect_uri, jit_provisioning, created, updated`;

function toRegistration(row: RegistrationRow): SsoRegistration {
  return {
    id: row.id,
    databaseId: row.database_id,
    tenantId: row.tenant_id,
    provider: row.provider,
    configUrl: row.config_url,
    metadata: typeof row.metadata === 'string' ? (JSON.parse(row.metadata) as ProviderMetadata) : row.metadata,
    clientId: row.client_id,
    sealedSecret: row.sealed_secret,
    emailDomains: row.email_domains,
    enabled: row.enabled,
    redirectUri: row.redirect_uri,
    jitProvisioning: row.jit_provisioning,
    created: new Date(row.created),
    updated: new Date(row.updated),
  };
}

/** Tenants' SSO registrations in the control plane, every replica reading the same rows. */
export class SqlSsoRegistrations implements SsoRegistrationRepository {
  constructor(private readonly orm: MikroORM) {}

  private async rows(sql: string, params: unknown[]): Promise<SsoRegistration[]> {
    const rows = await this.orm.em.getConnection().execute<RegistrationRow[]>(sql, params, 'all');
    return rows.map(toRegistration);
  }

  async create(registration: NewSsoRegistration): Promise<SsoRegistration> {
    const r = registration;
    try {
      const [created] = await this.rows(
        `insert into sso_registrations (id, database_id, tenant_id, provider, config_url, metadata, client_id, sealed_secret,
           email_domains, enabled, redirect_uri, jit_provisioning)
         values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ${TEXT_ARRAY}, ?, ?, ?) returning ${COLUMNS}`,
        [r.id, r.databaseId, r.tenantId, r.provider, r.configUrl, JSON.stringify(r.metadata), r.clientId, r.sealedSecret, JSON.stringify(r.emailDomains), r.enabled, r.redirectUri, r.jitProvisioning],
      );
      return created;
    } catch (error) {
      if (isUniqueViolation(error, 'sso_registrations_database_id_tenant_id_provider_key')) {
        throw new ConflictError('provider_already_exists', `SSO provider '${r.provider}' already exists for this tenant`, { cause: error });
      }
      throw error;
    }
  }

  async find(databaseId: string, tenantId: string, provider: string): Promise<SsoRegistration | null> {
    const [found] = await this.rows(`select ${COLUMNS} from sso_registrations where database_id = ? and tenant_id = ? and provider = ?`, [databaseId, tenantId, provider]);
    return found ?? null;
  }

  async findById(id: string): Promise<SsoRegistration | null> {
    const [found] = await this.rows(`select ${COLUMNS} from sso_registrations where id = ?`, [id]);
    return found ?? null;
  }

  listForTenant(databaseId: string, tenantId: string): Promise<SsoRegistration[]> {
    return this.rows(`select ${COLUMNS} from sso_registrations where database_id = ? and tenant_id = ? order by provider`, [databaseId, tenantId]);
  }

  listForDatabase(databaseId: string): Promise<SsoRegistration[]> {
    return this.rows(`select ${COLUMNS} from sso_registrations where database_id = ? order by tenant_id, provider`, [databaseId]);
  }

  async update(registration: SsoRegistration): Promise<SsoRegistration | null> {
    const r = registration;
    const [updated] = await this.rows(
      `update sso_registrations set config_url = ?, metadata = ?::jsonb, client_id = ?, sealed_secret = ?, email_domains = ${TEXT_ARRAY},
         enabled = ?, redirect_uri = ?, jit_provisioning = ?, updated = now()
       where id = ? returning ${COLUMNS}`,
      [r.configUrl, JSON.stringify(r.metadata), r.clientId, r.sealedSecret, JSON.stringify(r.emailDomains), r.enabled, r.redirectUri, r.jitProvisioning, r.id],
    );
    return updated ?? null;
  }

  async delete(databaseId: string, tenantId: string, provider: string): Promise<boolean> {
    const rows = await this.orm.em
      .getConnection()
      .execute<{ id: string }[]>(`delete from sso_registrations where database_id = ? and tenant_id = ? and provider = ? returning id`, [databaseId, tenantId, provider], 'all');
    return rows.length > 0;
  }

  /** Registrations sealed with another key than `currentKeyId`, for re-sealing after a key rotation. */
  async sealedWithOtherKeys(currentKeyId: string): Promise<SsoRegistration[]> {
    return this.rows(`select ${COLUMNS} from sso_registrations where split_part(sealed_secret, '.', 2) <> ?`, [currentKeyId]);
  }

  /** Replaces a sealed secret, unless it changed meanwhile (an update sealed it already). */
  async reseal(id: string, from: string, to: string): Promise<void> {
    await this.orm.em.getConnection().execute(`update sso_registrations set sealed_secret = ? where id = ? and sealed_secret = ?`, [to, id, from]);
  }
}

const digestOf = (value: string) => createHash('sha256').update(value).digest('hex');

interface LoginRow {
  browser_matches: boolean;
  registration_id: string;
  database_id: string;
  tenant_id: string;
  nonce: string;
  code_verifier: string;
  callback_url: string;
  link_user_id: string | null;
  link_session_id: string | null;
}

/**
 * Pending SSO sign-ins, found by their state's digest and deleted as they are read, so each is
 * used once whichever replica the browser comes back to. Expired ones are deleted now and then.
 */
export class SqlSsoLoginStates implements SsoLoginStateStore {
  private lastPrune = 0;

  constructor(
    private readonly orm: MikroORM,
    private readonly pruneEveryMs = 60_000,
  ) {}

  async save(
    state: string,
    browserToken: string,
    login: PendingSsoLogin,
    expires: Date,
    limit: { address: string; maxPerAddress: number },
  ): Promise<{ saved: true } | { saved: false; retryAfterSeconds: number }> {
    const connection = this.orm.em.getConnection();
    if (Date.now() - this.lastPrune >= this.pruneEveryMs) {
      this.lastPrune = Date.now();
      await connection.execute(`delete from sso_login_states where expires < now()`);
    }
    const address = digestOf(limit.address);
    // One statement: concurrent requests from one address may each see the count just under the
    // cap, so the bound holds to within the requests in flight.
    const rows = await connection.execute<{ saved: number }[]>(
      `insert into sso_login_states (state_digest, browser_digest, address_digest, registration_id, database_id, tenant_id, nonce,
         code_verifier, callback_url, link_user_id, link_session_id, expires)
       select decode(?, 'hex'), decode(?, 'hex'), decode(?, 'hex'), ?, ?, ?, ?, ?, ?, ?, ?, ?
       where (select count(*) from sso_login_states where address_digest = decode(?, 'hex') and expires > now()) < ?
       returning 1 as saved`,
      [
        digestOf(state),
        digestOf(browserToken),
        address,
        login.registrationId,
        login.databaseId,
        login.tenantId,
        login.nonce,
        login.codeVerifier,
        login.callbackUrl,
        login.link?.userId ?? null,
        login.link?.sessionId ?? null,
        expires,
        address,
        limit.maxPerAddress,
      ],
      'all',
    );
    if (rows.length === 1) return { saved: true };
    // A slot frees when the oldest sign-in under way expires.
    const [oldest] = await connection.execute<{ seconds: number | null }[]>(
      `select ceil(extract(epoch from min(expires) - now()))::int as seconds from sso_login_states where address_digest = decode(?, 'hex') and expires > now()`,
      [address],
      'all',
    );
    return { saved: false, retryAfterSeconds: Math.max(1, oldest?.seconds ?? 1) };
  }

  async take(state: string, browserToken: string | undefined): Promise<{ login: PendingSsoLogin; sameBrowser: boolean } | null> {
    const rows = await this.orm.em.getConnection().execute<LoginRow[]>(
      `delete from sso_login_states where state_digest = decode(?, 'hex')
       returning expires > now() as live, browser_digest = decode(?, 'hex') as browser_matches,
         registration_id, database_id, tenant_id, nonce, code_verifier, callback_url, link_user_id, link_session_id`,
      [digestOf(state), digestOf(browserToken ?? '')],
      'all',
    );
    const row = rows[0] as (LoginRow & { live: boolean }) | undefined;
    if (!row || !row.live) return null;
    return {
      sameBrowser: browserToken !== undefined && row.browser_matches,
      login: {
        registrationId: row.registration_id,
        databaseId: row.database_id,
        tenantId: row.tenant_id,
        nonce: row.nonce,
        codeVerifier: row.code_verifier,
        callbackUrl: row.callback_url,
        link: row.link_user_id && row.link_session_id ? { userId: row.link_user_id, sessionId: row.link_session_id } : null,
      },
    };
  }
}

/** The family surface's spent SSO states, by digest, until their cookies would have expired; expired ones are deleted now and then. */
export class SqlSpentSsoStates implements SpentSsoStateStore {
  private lastPrune = 0;

  constructor(
    private readonly orm: MikroORM,
    private readonly pruneEveryMs = 60_000,
  ) {}

  async spend(state: string, expires: Date): Promise<boolean> {
    const connection = this.orm.em.getConnection();
    if (Date.now() - this.lastPrune >= this.pruneEveryMs) {
      this.lastPrune = Date.now();
      await connection.execute(`delete from sso_spent_states where expires < now()`);
    }
    const rows = await connection.execute<{ spent: number }[]>(
      `insert into sso_spent_states (state_digest, expires) values (decode(?, 'hex'), ?) on conflict (state_digest) do nothing returning 1 as spent`,
      [digestOf(state), expires],
      'all',
    );
    return rows.length === 1;
  }
}

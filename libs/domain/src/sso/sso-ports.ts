/**
 * A tenant's single sign-on provider: an OpenID Provider the tenant's users sign in with. Kept in
 * the control plane; the client secret only ever sealed (SecretSealer), never shown.
 */
export interface SsoRegistration {
  id: string;
  databaseId: string;
  tenantId: string;
  /** The name in the path (`.../providers/{providerName}`), unique per tenant. */
  provider: string;
  configUrl: string;
  /** The provider's discovery document as fetched and checked at registration or update. */
  metadata: ProviderMetadata;
  clientId: string;
  /** The client secret, sealed with the registration's id as context. */
  sealedSecret: string;
  /** Lower-case domains; a user's verified email must be in one of them. */
  emailDomains: string[];
  enabled: boolean;
  /** Where the callback's page posts the signed-in user's token. */
  redirectUri: string;
  /** Whether a first sign-in creates the user and adds them to the tenant (on by default). */
  jitProvisioning: boolean;
  created: Date;
  updated: Date;
}

/** What the relying party needs of a provider's discovery document; the rest is kept as sent. */
export interface ProviderMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  [field: string]: unknown;
}

export type NewSsoRegistration = Omit<SsoRegistration, 'created' | 'updated'>;

export interface SsoRegistrationRepository {
  /** ConflictError `provider_already_exists` when the tenant has a provider of that name. */
  create(registration: NewSsoRegistration): Promise<SsoRegistration>;
  find(databaseId: string, tenantId: string, provider: string): Promise<SsoRegistration | null>;
  findById(id: string): Promise<SsoRegistration | null>;
  /** The tenant's providers, by name. */
  listForTenant(databaseId: string, tenantId: string): Promise<SsoRegistration[]>;
  /** Every tenant's providers in the database, by tenant then name. */
  listForDatabase(databaseId: string): Promise<SsoRegistration[]>;
  /** Writes every mutable field; null when the registration is gone. */
  update(registration: SsoRegistration): Promise<SsoRegistration | null>;
  delete(databaseId: string, tenantId: string, provider: string): Promise<boolean>;
}

/** A sign-in that went to the provider and has not come back yet: kept server-side, used once. */
export interface PendingSsoLogin {
  registrationId: string;
  databaseId: string;
  tenantId: string;
  nonce: string;
  codeVerifier: string;
  /** The callback URL the provider was given (the token request must repeat it exactly). */
  callbackUrl: string;
  /** The signed-in user who asked to link this provider to their account, and their session; null for a sign-in. */
  link: { userId: string; sessionId: string } | null;
}

export interface SsoLoginStateStore {
  /**
   * Keeps the login under its state until `expires`, bound to the browser holding `browserToken`,
   * counted against the client's address: nothing kept when that address already has
   * `maxPerAddress` sign-ins under way, with the seconds until the oldest of them expires.
   */
  save(
    state: string,
    browserToken: string,
    login: PendingSsoLogin,
    expires: Date,
    limit: { address: string; maxPerAddress: number },
  ): Promise<{ saved: true } | { saved: false; retryAfterSeconds: number }>;
  /**
   * Removes the login kept under `state` and answers it, with whether `browserToken` is the one it
   * is bound to; null when there is none (never saved, already taken, or expired).
   */
  take(state: string, browserToken: string | undefined): Promise<{ login: PendingSsoLogin; sameBrowser: boolean } | null>;
}

/**
 * The states of the family surface's sign-ins that finished: their pending login travels sealed in
 * the browser's cookie, not here, so this only makes each finish once.
 */
export interface SpentSsoStateStore {
  /** Records `state` (by its hash) as spent until `expires`; false when it was spent already. */
  spend(state: string, expires: Date): Promise<boolean>;
}

/** Who the provider says signed in, from a validated ID token. */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  givenName: string | null;
  familyName: string | null;
  picture: string | null;
}

/** The start of an authorization request: the provider's URL, and what must be kept to finish it. */
export interface AuthorizationStart {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * The OpenID Connect relying party. Discovery answers ValidationError `invalid_config_url` for a
 * URL it refuses to fetch, BadGatewayError `provider_config_error` (unreachable, not a discovery
 * document) or `provider_mismatch` (another issuer, missing what we need).
 */
export interface OidcRelyingParty {
  discover(configUrl: string): Promise<ProviderMetadata>;
  /** `reauthenticate` asks the provider to sign the user in again (prompt=login), whatever session it holds. */
  begin(input: { metadata: ProviderMetadata; clientId: string; callbackUrl: string; reauthenticate: boolean }): Promise<AuthorizationStart>;
  /**
   * Exchanges the authorization response for tokens and validates the ID token (issuer,
   * audience, nonce, expiry, signature, RFC 9207 `iss`). UnauthenticatedError
   * `oidc_authentication_failed` when the response or the token does not hold; BadGatewayError
   * `provider_config_error` when the provider cannot be reached or fails.
   */
  finish(input: {
    metadata: ProviderMetadata;
    clientId: string;
    clientSecret: string;
    /** The callback URL the provider redirected to, with its query. */
    responseUrl: URL;
    state: string;
    nonce: string;
    codeVerifier: string;
  }): Promise<OidcIdentity>;
}

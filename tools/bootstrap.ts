// First-run work of `npm start`: the control plane's database (embedded unless DATABASE_URL is
// set), its migrations, the signing key, and a developer with a default workspace and a client,
// so that a fresh clone has someone to sign in and something to get a token with.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { KeySet, maxSignedTokenSeconds, requireSecretBox, ScryptPasswordHasher, Sha256ClientSecrets, SIGNING_KEY_RING_VARIABLE, type KeyLog, type SecretBox } from '@platform/auth';
import { ConfigError, loadPlatformConfig, loadSignInSettings, type Env, type PlatformConfig } from '@platform/config';
import {
  API_SCOPES,
  bootstrapDeveloper,
  registerClient,
  rotateClientSecret,
  systemClock,
  type DeveloperRepository,
  type Principal,
} from '@platform/domain';
import {
  MikroSigningKeyRepository,
  migrateControlPlane,
  openOrm,
  openRepositories,
} from '@platform/persistence';
import { MANY_DATABASES_SETTINGS, startEmbeddedPostgres, type BackupSettings, type EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { readLocalCredentials, readRunningPlatform, writeLocalCredentials, type EmbeddedSettings, type LocalCredentials } from './local-state.js';

export const DEFAULT_DEVELOPER = { email: 'dev@localhost', name: 'Local developer' };
export const DEFAULT_WORKSPACE = { name: 'Default workspace', slug: 'default' };
const CONTROL_PLANE_DATABASE = 'platform';

/** Starts the embedded PostgreSQL when DATABASE_URL is unset (archiving its WAL with `backups`); returns the env the apps get. */
export async function provideControlPlane(env: Env, settings: EmbeddedSettings, backups: BackupSettings | null = null): Promise<{ env: Env; embedded: EmbeddedPostgresHandle | null }> {
  if (env.DATABASE_URL) return { env, embedded: null };
  const embedded = await startEmbeddedPostgres({
    dir: settings.dir,
    port: settings.port,
    settings: MANY_DATABASES_SETTINGS,
    extensionsDir: settings.extensionsDir,
    backups: backups ?? undefined,
  });
  await embedded.ensureDatabase(CONTROL_PLANE_DATABASE);
  return { env: { ...env, DATABASE_URL: embedded.url(CONTROL_PLANE_DATABASE) }, embedded };
}

const LOCAL_CLIENT_NAME = 'Local command line (npm start)';

/**
 * Migrates, seals and ensures the signing keys (SIGNING_KEY_SECRET_KEYS), the default developer
 * (with a password) and workspace, and a confidential client of that workspace whose secret is
 * new at every start. Mints no token: tokens come from the token service.
 */
export async function prepareControlPlane(config: PlatformConfig, env: Env) {
  const sealer = signingKeyRingOrExit(env);
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 2 });
  try {
    const applied = await migrateControlPlane(orm);
    const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock, sealer, log: consoleKeyLog });
    await keys.prepareForSigning({ maxTokenSeconds: maxSignedTokenSeconds(config.developerTokenTtlSeconds) });
    const repos = openRepositories(orm);
    const { developer, workspace } = await bootstrapDeveloper(repos, {
      email: DEFAULT_DEVELOPER.email,
      name: DEFAULT_DEVELOPER.name,
      workspaceName: DEFAULT_WORKSPACE.name,
      workspaceSlug: DEFAULT_WORKSPACE.slug,
    });
    const known = readLocalCredentials(env);
    const password = await ensurePassword(repos.developers, developer.id, known?.developer.password, loadSignInSettings(env).passwordHashLogN);

    const caller: Principal = { kind: 'developer', developerId: developer.id, scopes: API_SCOPES };
    const clientDeps = { ...repos, secrets: new Sha256ClientSecrets() };
    const existing = (await repos.clients.listForWorkspace(workspace.id)).find((client) => client.name === LOCAL_CLIENT_NAME);
    const clientId =
      existing?.id ?? (await registerClient(clientDeps, caller, workspace.slug, { name: LOCAL_CLIENT_NAME, type: 'confidential', redirectUris: [] })).client.id;
    const { secret } = await rotateClientSecret(clientDeps, caller, workspace.slug, clientId);

    const credentials: LocalCredentials = {
      developer: { email: developer.email, password },
      client: { client_id: clientId, client_secret: secret },
    };
    const credentialsPath = writeLocalCredentials(env, credentials);
    return { applied, developer, workspace, credentials, credentialsPath };
  } finally {
    await orm.close();
  }
}

/** Keeps the default developer's known password if it still verifies; otherwise sets a new one. */
async function ensurePassword(developers: DeveloperRepository, developerId: string, known: string | undefined, logN: number): Promise<string> {
  const hasher = new ScryptPasswordHasher(logN);
  const current = await developers.findById(developerId);
  const stored = current ? await developers.findCredentials(current.email) : null;
  if (known && stored?.passwordHash && (await hasher.verify(known, stored.passwordHash))) return known;
  const password = randomBytes(15).toString('base64url');
  await developers.setPasswordHash(developerId, await hasher.hash(password));
  return password;
}

/** A client_credentials token from the token service, as any client would get one. */
export async function requestClientToken(issuer: string, client: LocalCredentials['client']): Promise<{ access_token: string; expires_in: number }> {
  const response = await fetch(`${issuer}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials',
  });
  const body = (await response.json()) as { access_token: string; expires_in: number; error?: string; error_description?: string };
  if (!response.ok) throw new Error(`the token service answered ${response.status}: ${body.error} ${body.error_description ?? ''}`);
  return body;
}

/** The token service of the running `npm start`, else the one the environment describes. */
/**
 * Makes this process trust the development CA of a platform `npm start` runs over https
 * (PLATFORM_HTTPS), as NODE_EXTRA_CA_CERTS would; nothing when it runs over http.
 */
export function trustRunningPlatform(env: Env): void {
  const caCert = readRunningPlatform(env)?.httpsCaCert;
  if (caCert) trustCertificateAuthority(caCert);
}

/** Adds a CA (a PEM file) to what this process's TLS clients, fetch included, trust. */
export function trustCertificateAuthority(caCertPath: string): void {
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), readFileSync(caCertPath, 'utf8')]);
}

export function tokenServiceIssuer(env: Env): string {
  const running = readRunningPlatform(env);
  if (running) return running.issuer;
  // The control plane's URL is not needed here, but the configuration requires one.
  return loadConfigOrExit({ ...env, DATABASE_URL: env.DATABASE_URL || 'postgres://unused/unused' }).oauth.issuer;
}

/** What the key set has to say, on the terminal. */
export const consoleKeyLog: KeyLog = {
  info: (fields, message) => console.log(`${message} ${JSON.stringify(fields)}`),
  error: (fields, message) => console.error(`${message} ${JSON.stringify(fields)}`),
};

/** The ring signing keys are sealed with (SIGNING_KEY_SECRET_KEYS); exits 78 naming it when it is missing or malformed. */
export function signingKeyRingOrExit(env: Env): SecretBox {
  try {
    return requireSecretBox(env, SIGNING_KEY_RING_VARIABLE, 'it seals the private halves of the token-signing keys');
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`configuration error: ${error.message}`);
    process.exit(78);
  }
}

export function loadConfigOrExit(env: Env): PlatformConfig {
  try {
    return loadPlatformConfig(env);
  } catch (error) {
    console.error(`configuration error: ${(error as Error).message}`);
    process.exit(78);
  }
}

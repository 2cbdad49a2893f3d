// First-run work shared by `npm start` and `npm run token`: the control plane's database
// (embedded unless DATABASE_URL is set), its migrations, the signing key, and a developer with
// a default workspace, so that a fresh clone has someone to hand a token to.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { issueDeveloperToken, KeySet } from '@platform/auth';
import { loadPlatformConfig, readPort, readString, type Env, type PlatformConfig } from '@platform/config';
import { bootstrapDeveloper, systemClock } from '@platform/domain';
import {
  MikroSigningKeyRepository,
  migrateControlPlane,
  openOrm,
  openRepositories,
  startEmbeddedPostgres,
  type EmbeddedPostgresHandle,
} from '@platform/persistence';

export const DEFAULT_DEVELOPER = { email: 'dev@localhost', name: 'Local developer' };
export const DEFAULT_WORKSPACE = { name: 'Default workspace', slug: 'default' };
const CONTROL_PLANE_DATABASE = 'platform';

export function embeddedSettings(env: Env) {
  return {
    dir: resolve(readString(env, 'EMBEDDED_PG_DIR', '.data/postgres')),
    port: readPort(env, 'EMBEDDED_PG_PORT', 54329),
  };
}

/** Starts the embedded PostgreSQL when DATABASE_URL is unset; returns the env the apps get. */
export async function provideControlPlane(env: Env): Promise<{ env: Env; embedded: EmbeddedPostgresHandle | null }> {
  if (env.DATABASE_URL) return { env, embedded: null };
  const settings = embeddedSettings(env);
  const embedded = await startEmbeddedPostgres({ ...settings });
  await embedded.ensureDatabase(CONTROL_PLANE_DATABASE);
  return { env: { ...env, DATABASE_URL: embedded.url(CONTROL_PLANE_DATABASE) }, embedded };
}

/** The control-plane URL of an embedded server another process (`npm start`) is running. */
export function runningEmbeddedUrl(env: Env): string | null {
  const settings = embeddedSettings(env);
  const passwordFile = join(settings.dir, 'password');
  if (!existsSync(passwordFile)) return null;
  const password = readFileSync(passwordFile, 'utf8').trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${settings.port}/${CONTROL_PLANE_DATABASE}`;
}

/** Migrates, ensures a signing key and the default developer, and mints a developer token. */
export async function prepareControlPlane(config: PlatformConfig) {
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolSize: 2 });
  try {
    const applied = await migrateControlPlane(orm);
    const keys = new KeySet({ repository: new MikroSigningKeyRepository(orm.em.fork()), clock: systemClock });
    await keys.ensureSigningKey();
    const { developer, workspace } = await bootstrapDeveloper(openRepositories(orm), {
      email: DEFAULT_DEVELOPER.email,
      name: DEFAULT_DEVELOPER.name,
      workspaceName: DEFAULT_WORKSPACE.name,
      workspaceSlug: DEFAULT_WORKSPACE.slug,
    });
    const token = await issueDeveloperToken(
      keys,
      { issuer: config.oauth.issuer, audience: config.api.publicBaseUrl, clock: systemClock },
      { developerId: developer.id, clientId: 'platform-bootstrap', scopes: [], ttlSeconds: config.developerTokenTtlSeconds },
    );
    return { applied, developer, workspace, token };
  } finally {
    await orm.close();
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

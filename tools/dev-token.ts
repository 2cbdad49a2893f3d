// `npm run token`: prints a fresh access token for the default workspace, from the running token
// service's client_credentials grant, with the local client `npm start` set up. It finds the token
// service in the record `npm start` keeps while it runs, else where the environment says.
import { requestClientToken, tokenServiceIssuer, trustRunningPlatform } from './bootstrap.js';
import { localCredentialsPath, readLocalCredentials } from './local-state.js';

const credentials = readLocalCredentials(process.env);
if (!credentials) {
  console.error(`No ${localCredentialsPath(process.env)}: run \`npm start\` first.`);
  process.exit(1);
}
trustRunningPlatform(process.env);
const issuer = tokenServiceIssuer(process.env);
try {
  console.log((await requestClientToken(issuer, credentials.client)).access_token);
} catch (error) {
  console.error(`Could not get a token from ${issuer} (is \`npm start\` running?): ${(error as Error).message}`);
  process.exit(1);
}

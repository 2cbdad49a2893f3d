// `npm run token`: prints a fresh developer token for the default developer. Works against the
// embedded PostgreSQL of a running `npm start`, or the control plane named by DATABASE_URL.
import { loadConfigOrExit, prepareControlPlane, runningEmbeddedUrl } from './bootstrap.js';

const databaseUrl = process.env.DATABASE_URL || runningEmbeddedUrl(process.env);
if (!databaseUrl) {
  console.error('No control plane: run `npm start` first, or set DATABASE_URL.');
  process.exit(1);
}
const config = loadConfigOrExit({ ...process.env, DATABASE_URL: databaseUrl });
try {
  const { token } = await prepareControlPlane(config);
  console.log(token.token);
} catch (error) {
  console.error(`Could not reach the control plane (is \`npm start\` running?): ${(error as Error).message}`);
  process.exit(1);
}

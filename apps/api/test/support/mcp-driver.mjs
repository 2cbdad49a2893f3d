// Runs tool functions of the published MCP server package (@niledatabase/nile-mcp-server) against
// a base URL, as its server would, and prints their results as JSON. Run as a process of its own so
// that it trusts exactly what a user's Node would (NODE_EXTRA_CA_CERTS), and in a scratch folder,
// since the package writes logs under the working directory.
//
// argv[2]: JSON { context: { baseUrl, apiKey, workspaceSlug }, steps: [{ tool, args, gateway? }] }.
// A step `executeSQL` with `gateway` runs on the connection string the previous getConnectionString
// step printed, its host and port replaced by `gateway`: the package writes `<region>.db.thenile.dev:5432`.
import * as tools from '@niledatabase/nile-mcp-server/dist/tools.js';

const { context, steps } = JSON.parse(process.argv[2]);
const results = [];
for (const step of steps) {
  let args = step.args;
  if (step.tool === 'executeSQL' && step.gateway) {
    // As the package itself reads it back: the second line, split by hand (no URL decoding).
    const printed = results.at(-1).content[0].text.split('\n')[1].trim();
    args = { ...args, connectionString: printed.replace(/@[^/@]+\//, `@${step.gateway}/`) };
  }
  results.push(step.tool === 'listDatabases' ? await tools.listDatabases(context) : await tools[step.tool](args, context));
}
process.stdout.write(JSON.stringify(results));

// What a pooled server connection's server last reported of its parameters (ParameterStatus), kept as
// it comes, whoever the answer goes to: a client that logs in on that connection is told those.
import { parseBackendMessage } from './backend-parser.js';
import type { ServerConnection } from './server-pool.js';

/** Keeps what a server connection's ParameterStatus says. */
export function noteParameter(connection: ServerConnection, raw: Buffer): void {
  const message = parseBackendMessage(raw) as unknown as { parameterName: string; parameterValue: string };
  connection.parameters.set(message.parameterName, message.parameterValue);
}

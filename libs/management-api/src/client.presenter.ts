import { CLIENT_ID_MAX_LENGTH, CLIENT_ID_PATTERN, CLIENT_ID_RULE, type OAuthClient, type OAuthClientType } from '@platform/domain';
import { arrayOf, dateTime, oneOf, optional, record, text } from '@platform/http';

export const CLIENT_NAME_MAX_LENGTH = 100;
export const REDIRECT_URI_MAX_LENGTH = 2048;
export const CLIENT_TYPES = ['confidential', 'public'] as const satisfies readonly OAuthClientType[];

const clientFields = {
  client_id: text({ max: CLIENT_ID_MAX_LENGTH, pattern: CLIENT_ID_PATTERN, patternMessage: CLIENT_ID_RULE }),
  name: text({ max: CLIENT_NAME_MAX_LENGTH }),
  type: oneOf(CLIENT_TYPES, 'confidential: has a secret (servers); public: none (command-line tools, loopback redirects)'),
  redirect_uris: arrayOf(text({ max: REDIRECT_URI_MAX_LENGTH })),
  created: dateTime(),
};

export const ClientSchema = record(clientFields, 'An OAuth client of the workspace');

export const ClientWithSecretSchema = record(
  { ...clientFields, client_secret: text({ max: 128, description: 'Shown this once; store it now. Only its digest is kept.' }) },
  'A confidential client with its new secret',
);

export const NewClientSchema = record(
  { ...clientFields, client_secret: optional(text({ max: 128, description: 'Confidential clients only; shown this once' })) },
  'The registered client',
);

export function presentClient(client: OAuthClient) {
  return {
    client_id: client.id,
    name: client.name,
    type: client.type,
    redirect_uris: client.redirectUris,
    created: client.created.toISOString(),
  };
}

/** A client with the secret it was just given (a public client has none). */
export function presentClientWithSecret(client: OAuthClient, secret: string | null) {
  return { ...presentClient(client), ...(secret ? { client_secret: secret } : {}) };
}

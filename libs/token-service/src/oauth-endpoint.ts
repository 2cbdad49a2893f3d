import { authenticateClient, OAuthError, type OAuthClient } from '@platform/domain';
import type { RequestInput, Responded } from '@platform/http';
import { presentedCredentials, usesBasic } from './client-authentication.js';
import { oauthErrorAnswer } from './oauth-error-answer.js';
import type { FormFields } from './single-parameters.js';
import type { TokenServiceScope } from './token-service-scope.js';

/** What a form-encoded endpoint's route gets: the form, or undefined when the body was not one. */
export type FormInput = RequestInput<TokenServiceScope, undefined, undefined, FormFields | undefined>;

/**
 * Runs a form-encoded OAuth endpoint: the form, client authentication, then the endpoint's own
 * work; any OAuthError on the way is answered in RFC 6749's shape.
 */
export async function runOAuthEndpoint(input: FormInput, work: (form: FormFields, client: OAuthClient) => Promise<Responded>): Promise<Responded> {
  let basicUsed = usesBasic(input.header('authorization'));
  try {
    if (input.body === undefined) throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded');
    const credentials = presentedCredentials(input.header('authorization'), input.body);
    basicUsed = credentials.basic;
    const client = await authenticateClient(input.scope, credentials);
    return await work(input.body, client);
  } catch (error) {
    if (error instanceof OAuthError) return oauthErrorAnswer(error, basicUsed);
    throw error;
  }
}

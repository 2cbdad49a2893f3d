import { OAuthError } from '@platform/domain';
import { singleParameter, type FormFields } from './single-parameters.js';

export interface PresentedCredentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
  /** Whether they came by HTTP Basic, whose failure is answered with a Basic challenge. */
  basic: boolean;
}

/** Client credentials from HTTP Basic (RFC 6749 section 2.3.1) or the form, never both. */
export function presentedCredentials(authorization: string, form: FormFields): PresentedCredentials {
  const formId = singleParameter(form, 'client_id');
  const formSecret = singleParameter(form, 'client_secret');
  if (!usesBasic(authorization)) return { clientId: formId, clientSecret: formSecret, basic: false };
  if (formSecret !== undefined) throw new OAuthError('invalid_request', 'Use one client authentication method, not two');
  const { clientId, clientSecret } = parseBasic(authorization);
  if (formId !== undefined && formId !== clientId) throw new OAuthError('invalid_request', 'client_id differs from the Basic credentials');
  return { clientId, clientSecret, basic: true };
}

export function usesBasic(authorization: string): boolean {
  return /^basic /i.test(authorization);
}

/** `Basic base64(urlencoded id ":" urlencoded secret)`, as RFC 6749 section 2.3.1 encodes it. */
function parseBasic(authorization: string): { clientId: string; clientSecret: string } {
  const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'Malformed Basic credentials');
  try {
    return {
      clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      clientSecret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    throw new OAuthError('invalid_client', 'Malformed Basic credentials');
  }
}

import type { SsoLocation, SsoRegistration, SsoRegistrationInput } from '@platform/domain';
import { arrayOf, bool, dateTime, optional, record, text, uuid, type Infer } from '@platform/http';

// SSO registrations as the API shows them: the client secret is write-only, in no answer.

const configUrl = text({ min: 1, max: 2048, format: 'uri', description: 'The provider’s discovery document (…/.well-known/openid-configuration); https' });
const clientId = text({ min: 1, max: 255, description: 'The client id the provider issued for this platform' });
const clientSecret = text({ min: 1, max: 1024, description: 'Write-only: sealed at rest (SSO_SECRET_KEYS) and never shown' });
const emailDomains = arrayOf(text({ min: 1, max: 253 }), 'Domains whose verified emails may sign in (1 to 50), e.g. ["example.com"]');
const enabled = bool('Whether users can sign in with it (default true)');
const redirectURI = text({
  min: 1,
  max: 2048,
  format: 'uri',
  description: 'Where the callback page posts access_token, tenantId and userId: https, or http to localhost',
});
const jitProvisioning = bool('Whether a first sign-in creates the user and adds them to the tenant (default true)');

export const SsoRegistrationRequest = record(
  { configUrl, clientId, clientSecret, emailDomains, enabled: optional(enabled), redirectURI, jitProvisioning: optional(jitProvisioning) },
  'A provider to register: configUrl, clientId, clientSecret, emailDomains and redirectURI are required',
);

export const SsoRegistrationPatch = record(
  {
    configUrl: optional(configUrl),
    clientId: optional(clientId),
    clientSecret: optional(clientSecret),
    emailDomains: optional(emailDomains),
    enabled: optional(enabled),
    redirectURI: optional(redirectURI),
    jitProvisioning: optional(jitProvisioning),
  },
  'Given fields overwrite, omitted ones keep their values',
);

export function registrationInput(body: Infer<typeof SsoRegistrationRequest>): SsoRegistrationInput;
export function registrationInput(body: Infer<typeof SsoRegistrationPatch>): Partial<SsoRegistrationInput>;
export function registrationInput(body: Infer<typeof SsoRegistrationPatch>): Partial<SsoRegistrationInput> {
  const { redirectURI, ...rest } = body;
  return { ...rest, ...(redirectURI === undefined ? {} : { redirectUri: redirectURI }) };
}

export const SsoRegistrationSchema = record(
  {
    id: uuid('The registration’s id'),
    tenantId: uuid(),
    provider: text({ max: 63, description: 'The provider’s name in this tenant (the path’s providerName)' }),
    configUrl,
    clientId,
    emailDomains: arrayOf(text({ max: 253 })),
    enabled,
    redirectURI,
    jitProvisioning,
    created: dateTime(),
    updated: dateTime(),
  },
  'A tenant’s SSO provider (TenantSSORegistration); clientSecret is write-only and never shown',
);

export function presentRegistration(registration: SsoRegistration) {
  return {
    id: registration.id,
    tenantId: registration.tenantId,
    provider: registration.provider,
    configUrl: registration.configUrl,
    clientId: registration.clientId,
    emailDomains: registration.emailDomains,
    enabled: registration.enabled,
    redirectURI: registration.redirectUri,
    jitProvisioning: registration.jitProvisioning,
    created: registration.created.toISOString(),
    updated: registration.updated.toISOString(),
  };
}

export const SsoLocationSchema = record(
  {
    tenantId: uuid(),
    provider: text({ max: 63 }),
    uri: text({ max: 4096, format: 'uri', description: 'The provider’s login URL: send the browser there' }),
  },
  'Where to start signing in to one tenant with one provider',
);

export function presentLocation(location: SsoLocation) {
  return { tenantId: location.tenantId, provider: location.provider, uri: location.uri };
}

// A tenant's SSO providers (OpenID Connect): register, enable or disable, remove.
import { api } from './api';
import { ErrorLine, fieldsOf, Panel, useAction, useResource } from './hooks';
import type { SsoProvider } from './types';

export function SsoProviders({ tenantPath }: { tenantPath: string }) {
  const base = `${tenantPath}/auth/oidc/providers`;
  const providers = useResource(() => api<SsoProvider[]>('GET', base), base);
  const action = useAction();
  const path = (name: string) => `${base}/${encodeURIComponent(name)}`;
  return (
    <Panel title="SSO providers">
      <form
        class="stacked"
        aria-label="New SSO provider"
        onSubmit={async (event) => {
          const form = event.currentTarget;
          const { provider, configUrl, clientId, clientSecret, emailDomains, redirectURI } = fieldsOf(event);
          const domains = emailDomains.split(/[\s,]+/).filter(Boolean);
          if (await action.run(() => api('POST', path(provider), { configUrl, clientId, clientSecret, emailDomains: domains, redirectURI }))) {
            form.reset();
            providers.reload();
          }
        }}
      >
        <input name="provider" placeholder="name (e.g. okta)" aria-label="Provider name" required />
        <input name="configUrl" type="url" placeholder="https://idp.example.com/.well-known/openid-configuration" aria-label="Discovery URL" required />
        <input name="clientId" placeholder="client id" aria-label="Client id" required />
        <input name="clientSecret" type="password" placeholder="client secret" aria-label="Client secret" autoComplete="off" required />
        <input name="emailDomains" placeholder="email domains, comma-separated (example.com)" aria-label="Email domains" required />
        <input name="redirectURI" type="url" placeholder="https://app.example.com/sso (where the signed-in user’s token is posted)" aria-label="App redirect URI" required />
        <button disabled={action.busy}>Register provider</button>
      </form>
      <ErrorLine error={action.error ?? providers.error} />
      <table>
        <tbody>
          {(providers.data ?? []).map((provider) => (
            <tr key={provider.id}>
              <td>{provider.provider}</td>
              <td>
                <code>{provider.configUrl}</code>
              </td>
              <td>{(provider.emailDomains ?? []).join(', ')}</td>
              <td>
                <code>{provider.redirectURI}</code>
              </td>
              <td>{provider.enabled === false ? 'disabled' : 'enabled'}</td>
              <td class="actions">
                <button
                  type="button"
                  class="quiet"
                  onClick={async () => (await action.run(() => api('PUT', path(provider.provider), { enabled: provider.enabled === false }))) && providers.reload()}
                >
                  {provider.enabled === false ? 'Enable' : 'Disable'}
                </button>
                <button
                  type="button"
                  class="danger"
                  onClick={async () => confirm(`Remove the provider ${provider.provider}?`) && (await action.run(() => api('DELETE', path(provider.provider)))) && providers.reload()}
                >
                  Remove
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {providers.data?.length === 0 ? <p class="empty">No SSO provider for this tenant.</p> : null}
    </Panel>
  );
}

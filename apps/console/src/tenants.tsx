// A database's tenants; the chosen tenant's users and SSO providers.
import { useState } from 'preact/hooks';
import { api, pathOf } from './api';
import { ErrorLine, fieldsOf, Panel, useAction, useResource } from './hooks';
import { SsoProviders } from './sso';
import type { DatabaseRef, Tenant, User } from './types';

function Users({ tenantPath }: { tenantPath: string }) {
  const users = useResource(() => api<User[]>('GET', `${tenantPath}/users`), tenantPath);
  const action = useAction();
  return (
    <Panel title="Users">
      <form
        class="inline"
        aria-label="New user"
        onSubmit={async (event) => {
          const form = event.currentTarget;
          const { email, password } = fieldsOf(event);
          if (await action.run(() => api('POST', `${tenantPath}/users`, { email, password }))) {
            form.reset();
            users.reload();
          }
        }}
      >
        <input name="email" type="email" placeholder="email" aria-label="User email" required />
        <input name="password" type="password" placeholder="password" aria-label="User password" autoComplete="new-password" required />
        <button disabled={action.busy}>Create user</button>
      </form>
      <ErrorLine error={action.error ?? users.error} />
      <ul>
        {(users.data ?? []).map((user) => (
          <li key={user.id}>
            {user.email} {user.name ? `(${user.name})` : ''}
          </li>
        ))}
      </ul>
    </Panel>
  );
}

export function Tenants({ database }: { database: DatabaseRef }) {
  const base = pathOf('workspaces', database.slug, 'databases', database.name);
  const tenants = useResource(() => api<Tenant[]>('GET', `${base}/tenants`), base);
  const [chosen, setChosen] = useState<string>();
  const action = useAction();
  const tenantPath = chosen ? `${base}/tenants/${encodeURIComponent(chosen)}` : undefined;
  return (
    <>
      <Panel title="Tenants">
        <form
          class="inline"
          aria-label="New tenant"
          onSubmit={async (event) => {
            const form = event.currentTarget;
            const { name } = fieldsOf(event);
            if (await action.run(() => api('POST', `${base}/tenants`, { name }))) {
              form.reset();
              tenants.reload();
            }
          }}
        >
          <input name="name" placeholder="Tenant name" aria-label="Tenant name" required />
          <button disabled={action.busy}>Create tenant</button>
        </form>
        <ErrorLine error={action.error ?? tenants.error} />
        <table>
          <tbody>
            {(tenants.data ?? []).map((tenant) => (
              <tr key={tenant.id} class={chosen === tenant.id ? 'chosen' : undefined}>
                <td>
                  <button type="button" class="link" onClick={() => setChosen(tenant.id)}>
                    {tenant.name ?? '(no name)'}
                  </button>
                </td>
                <td>
                  <code>{tenant.id}</code>
                </td>
                <td class="actions">
                  <button
                    type="button"
                    class="danger"
                    onClick={async () => {
                      if (confirm(`Delete the tenant ${tenant.name ?? tenant.id}?`) && (await action.run(() => api('DELETE', `${base}/tenants/${encodeURIComponent(tenant.id)}`)))) {
                        if (chosen === tenant.id) setChosen(undefined);
                        tenants.reload();
                      }
                    }}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Panel>
      {tenantPath ? <Users key={tenantPath} tenantPath={tenantPath} /> : null}
      {tenantPath ? <SsoProviders key={`sso ${tenantPath}`} tenantPath={tenantPath} /> : null}
    </>
  );
}

// A database's credentials: a new one shows its password and connection string once (copyable);
// a credential may be bound to a tenant; delete.
import { useState } from 'preact/hooks';
import { api, pathOf } from './api';
import { Copyable, ErrorLine, fieldsOf, Panel, useAction, useResource } from './hooks';
import type { Credential, DatabaseRef, NewCredential, Tenant } from './types';

export function Credentials({ database }: { database: DatabaseRef }) {
  const base = pathOf('workspaces', database.slug, 'databases', database.name);
  const credentials = useResource(() => api<Credential[]>('GET', `${base}/credentials`), base);
  const tenants = useResource(() => api<Tenant[]>('GET', `${base}/tenants`), base);
  const [created, setCreated] = useState<NewCredential>();
  const action = useAction();
  return (
    <Panel title="Credentials">
      <form
        class="inline"
        aria-label="New credential"
        onSubmit={async (event) => {
          const { tenantId } = fieldsOf(event);
          if (await action.run(async () => setCreated(await api<NewCredential>('POST', `${base}/credentials`, tenantId ? { tenantId } : {})))) credentials.reload();
        }}
      >
        <select name="tenantId" aria-label="Tenant of the credential">
          <option value="">Every tenant</option>
          {(tenants.data ?? []).map((tenant) => (
            <option key={tenant.id} value={tenant.id}>
              {tenant.name ?? tenant.id}
            </option>
          ))}
        </select>
        <button disabled={action.busy}>Create credential</button>
      </form>
      {created ? (
        <div class="shown-once" aria-label="New credential">
          <p>
            Credential <code>{created.id}</code>: its password is shown now only.
          </p>
          <Copyable label="Password" value={created.password} />
          <Copyable label="Connection string" value={created.connectionUrl} />
          <button type="button" class="quiet" onClick={() => setCreated(undefined)}>
            Done
          </button>
        </div>
      ) : null}
      <ErrorLine error={action.error ?? credentials.error} />
      <table>
        <thead>
          <tr>
            <th>User name</th>
            <th>Tenant</th>
            <th>Created</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(credentials.data ?? []).map((credential) => (
            <tr key={credential.id} data-credential={credential.id}>
              <td>
                <code>{credential.id}</code>
              </td>
              <td>{credential.tenantId ?? 'every tenant'}</td>
              <td>{new Date(credential.created).toLocaleString()}</td>
              <td class="actions">
                <button
                  type="button"
                  class="danger"
                  onClick={async () => {
                    if (confirm(`Delete the credential ${credential.id}?`) && (await action.run(() => api('DELETE', `${base}/credentials/${encodeURIComponent(credential.id)}`)))) {
                      credentials.reload();
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
  );
}

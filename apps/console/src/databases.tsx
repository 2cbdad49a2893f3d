// The databases of a workspace: create, rename, delete, and their status kept live by polling
// (every 2 s while one is on its way to READY or gone, every 10 s otherwise).
import { useState } from 'preact/hooks';
import { api, pathOf } from './api';
import { ErrorLine, fieldsOf, Panel, Status, useAction, useResource } from './hooks';
import type { Database, DatabaseRef } from './types';

const SETTLED = new Set(['READY', 'DELETED', 'FAILED']);

function DatabaseRow({ slug, database, chosen, onChoose, onChanged }: { slug: string; database: Database; chosen: boolean; onChoose: (ref: DatabaseRef | undefined) => void; onChanged: () => void }) {
  const [renaming, setRenaming] = useState(false);
  const action = useAction();
  const path = pathOf('workspaces', slug, 'databases', database.name);
  return (
    <tr data-database={database.name} class={chosen ? 'chosen' : undefined}>
      <td>
        {renaming ? (
          <form
            class="inline"
            aria-label={`Rename ${database.name}`}
            onSubmit={async (event) => {
              const { name } = fieldsOf(event);
              if (await action.run(() => api('PUT', path, { name }))) {
                setRenaming(false);
                if (chosen) onChoose({ slug, name, id: database.id });
                onChanged();
              }
            }}
          >
            <input name="name" defaultValue={database.name} aria-label="New name" required />
            <button disabled={action.busy}>Save</button>
            <button type="button" class="quiet" onClick={() => setRenaming(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <button type="button" class="link" onClick={() => onChoose({ slug, name: database.name, id: database.id })}>
            {database.name}
          </button>
        )}
        <ErrorLine error={action.error} />
      </td>
      <td>
        <Status value={database.status} />
      </td>
      <td>{database.region}</td>
      <td>
        <code>{database.dbHost}</code>
      </td>
      <td class="actions">
        <button type="button" class="quiet" onClick={() => setRenaming(true)}>
          Rename
        </button>
        <button
          type="button"
          class="danger"
          disabled={action.busy}
          onClick={async () => {
            if (!confirm(`Delete the database ${database.name}?`)) return;
            if (await action.run(() => api('DELETE', path))) {
              if (chosen) onChoose(undefined);
              onChanged();
            }
          }}
        >
          Delete
        </button>
      </td>
    </tr>
  );
}

export function Databases({ slug, chosen, onChoose }: { slug: string; chosen?: DatabaseRef; onChoose: (ref: DatabaseRef | undefined) => void }) {
  const databases = useResource(
    () => api<Database[]>('GET', pathOf('workspaces', slug, 'databases')),
    slug,
    (list) => (list?.some((database) => !SETTLED.has(database.status)) ? 2_000 : 10_000),
  );
  const regions = useResource(() => api<string[]>('GET', pathOf('workspaces', slug, 'regions')), slug);
  const create = useAction();
  return (
    <Panel title="Databases">
      <form
        class="inline"
        aria-label="New database"
        onSubmit={async (event) => {
          const form = event.currentTarget;
          const { databaseName, region } = fieldsOf(event);
          if (await create.run(() => api('POST', pathOf('workspaces', slug, 'databases'), { databaseName, region }))) {
            form.reset();
            databases.reload();
          }
        }}
      >
        <input name="databaseName" placeholder="database_name" aria-label="Database name" required />
        <select name="region" aria-label="Region">
          {(regions.data ?? []).map((region) => (
            <option key={region}>{region}</option>
          ))}
        </select>
        <button disabled={create.busy}>Create database</button>
      </form>
      <ErrorLine error={create.error ?? databases.error ?? regions.error} />
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Status</th>
            <th>Region</th>
            <th>Host</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(databases.data ?? []).map((database) => (
            <DatabaseRow key={database.id} slug={slug} database={database} chosen={chosen?.id === database.id} onChoose={onChoose} onChanged={databases.reload} />
          ))}
        </tbody>
      </table>
      {databases.data?.length === 0 ? <p class="empty">No database yet.</p> : null}
    </Panel>
  );
}

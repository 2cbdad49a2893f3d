// The frame after sign-in: the developer's workspaces, the databases of the chosen one, and the
// chosen database's panels.
import { useState } from 'preact/hooks';
import { api } from './api';
import { Databases } from './databases';
import { DatabasePanels } from './database-panels';
import { ErrorLine, fieldsOf, useAction, useResource } from './hooks';
import type { DatabaseRef, Workspace } from './types';

function NewWorkspace({ onCreated }: { onCreated: (slug: string) => void }) {
  const action = useAction();
  return (
    <form
      class="inline"
      aria-label="New workspace"
      onSubmit={async (event) => {
        const form = event.currentTarget;
        const { name } = fieldsOf(event);
        let slug = '';
        if (await action.run(async () => (slug = (await api<Workspace>('POST', '/workspaces', { name })).slug))) {
          form.reset();
          onCreated(slug);
        }
      }}
    >
      <input name="name" placeholder="New workspace" aria-label="Workspace name" required />
      <button disabled={action.busy}>Create workspace</button>
      <ErrorLine error={action.error} />
    </form>
  );
}

export function Workspaces({ onSignOut }: { onSignOut: () => void }) {
  const workspaces = useResource(() => api<Workspace[]>('GET', '/workspaces'), 'workspaces');
  const [chosen, setChosen] = useState<string>();
  const [database, setDatabase] = useState<DatabaseRef>();
  const slug = chosen ?? workspaces.data?.[0]?.slug;
  return (
    <div class="frame">
      <header>
        <h1>Console</h1>
        <label>
          Workspace{' '}
          <select
            aria-label="Workspace"
            value={slug}
            onChange={(event) => {
              setChosen((event.currentTarget as HTMLSelectElement).value);
              setDatabase(undefined);
            }}
          >
            {(workspaces.data ?? []).map((workspace) => (
              <option key={workspace.slug} value={workspace.slug}>
                {workspace.name} ({workspace.slug})
              </option>
            ))}
          </select>
        </label>
        <NewWorkspace
          onCreated={(created) => {
            setChosen(created);
            setDatabase(undefined);
            workspaces.reload();
          }}
        />
        <button type="button" class="quiet" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <ErrorLine error={workspaces.error} />
      {workspaces.data && workspaces.data.length === 0 ? <p>No workspace yet: create one.</p> : null}
      {slug ? <Databases slug={slug} chosen={database} onChoose={setDatabase} /> : null}
      {slug && database && database.slug === slug ? <DatabasePanels key={database.id} database={database} /> : null}
    </div>
  );
}

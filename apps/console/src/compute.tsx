// A database's dedicated compute: create (on a compute type), resize, delete, and the status
// kept live while an instance is on its way.
import { api, pathOf } from './api';
import { ErrorLine, fieldsOf, Panel, Status, useAction, useResource } from './hooks';
import type { ComputeInstance, ComputeType, DatabaseRef } from './types';

const SETTLED = new Set(['READY', 'TERMINATED', 'FAILED']);

function SizeSelect({ types, name, label, value }: { types: ComputeType[]; name: string; label: string; value?: string }) {
  return (
    <select name={name} aria-label={label} value={value}>
      {types.map((type) => (
        <option key={type.id} value={type.computeSize}>
          {type.computeSize}
        </option>
      ))}
    </select>
  );
}

export function Compute({ database }: { database: DatabaseRef }) {
  const base = `${pathOf('workspaces', database.slug, 'databases', database.name)}/compute`;
  const types = useResource(() => api<ComputeType[]>('GET', `${pathOf('workspaces', database.slug)}/compute-types`), base);
  const instances = useResource(
    () => api<ComputeInstance[]>('GET', base),
    base,
    (list) => (list?.some((instance) => !SETTLED.has(instance.status)) ? 2_000 : 10_000),
  );
  const action = useAction();
  const live = (instances.data ?? []).filter((instance) => instance.status !== 'TERMINATED');
  return (
    <Panel title="Dedicated compute">
      {types.data?.length === 0 ? <p class="empty">This platform runs no dedicated compute.</p> : null}
      {types.data?.length && live.length === 0 ? (
        <form
          class="inline"
          aria-label="New compute instance"
          onSubmit={async (event) => {
            const { instanceName, instanceSize } = fieldsOf(event);
            if (await action.run(() => api('POST', base, { instanceName, instanceSize }))) instances.reload();
          }}
        >
          <input name="instanceName" placeholder="instance name" aria-label="Instance name" required />
          <SizeSelect types={types.data} name="instanceSize" label="Instance size" />
          <button disabled={action.busy}>Create instance</button>
        </form>
      ) : null}
      <ErrorLine error={action.error ?? instances.error ?? types.error} />
      <table>
        <tbody>
          {(instances.data ?? []).map((instance) => {
            const path = `${base}/${encodeURIComponent(instance.instanceId)}`;
            const resizing = instance.desiredInstanceType.id !== instance.instanceType.id;
            return (
              <tr key={instance.instanceId} data-instance={instance.instanceName}>
                <td>{instance.instanceName}</td>
                <td>
                  <Status value={instance.status} />
                  {instance.failure ? <span class="error"> {instance.failure}</span> : null}
                </td>
                <td>
                  {instance.instanceType.computeSize}
                  {resizing ? ` → ${instance.desiredInstanceType.computeSize}` : ''}
                </td>
                <td class="actions">
                  {instance.status === 'READY' && types.data ? (
                    <form
                      class="inline"
                      aria-label={`Resize ${instance.instanceName}`}
                      onSubmit={async (event) => {
                        const { instanceSize } = fieldsOf(event);
                        if (await action.run(() => api('PUT', path, { instanceSize }))) instances.reload();
                      }}
                    >
                      <SizeSelect types={types.data} name="instanceSize" label="New size" value={instance.instanceType.computeSize} />
                      <button>Resize</button>
                    </form>
                  ) : null}
                  {instance.status !== 'TERMINATED' && instance.status !== 'DELETING' ? (
                    <button
                      type="button"
                      class="danger"
                      onClick={async () => confirm(`Delete the instance ${instance.instanceName}? The database moves back to its region’s cluster.`) && (await action.run(() => api('DELETE', path))) && instances.reload()}
                    >
                      Delete
                    </button>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </Panel>
  );
}

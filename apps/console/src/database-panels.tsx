// The chosen database's panels, one at a time.
import { useState } from 'preact/hooks';
import { Compute } from './compute';
import { Credentials } from './credentials';
import { Insights } from './insights';
import { Tenants } from './tenants';
import type { DatabaseRef } from './types';

const TABS = ['Credentials', 'Tenants', 'Compute', 'Insights'] as const;
type Tab = (typeof TABS)[number];

export function DatabasePanels({ database }: { database: DatabaseRef }) {
  const [tab, setTab] = useState<Tab>('Credentials');
  return (
    <div class="database">
      <h2>
        Database <code>{database.name}</code>
      </h2>
      <nav role="tablist" aria-label="Database panels">
        {TABS.map((name) => (
          <button key={name} type="button" role="tab" aria-selected={tab === name} onClick={() => setTab(name)}>
            {name}
          </button>
        ))}
      </nav>
      {tab === 'Credentials' ? <Credentials database={database} /> : null}
      {tab === 'Tenants' ? <Tenants database={database} /> : null}
      {tab === 'Compute' ? <Compute database={database} /> : null}
      {tab === 'Insights' ? <Insights database={database} /> : null}
    </div>
  );
}

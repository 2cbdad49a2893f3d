// Query insights as charts (uPlot): queries per second and p99 latency per minute over a window
// ending with the current minute, for the database or one tenant; refreshed every 10 s.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api, pathOf } from './api';
import { ErrorLine, Panel, useResource } from './hooks';
import type { DatabaseRef, QueryPerformance, Tenant } from './types';

const WINDOWS = { '15 minutes': 15, '1 hour': 60, '6 hours': 360, '24 hours': 1440 } as const;
type WindowName = keyof typeof WINDOWS;
const MINUTE = 60_000;

/** Three decimals: the legend shows a bucket's figure as the API gave it, rounded. */
export const shown = (value: number | null | undefined) => (value === null || value === undefined ? '–' : value.toFixed(3));

function Chart({ title, unit, times, values, color }: { title: string; unit: string; times: number[]; values: number[]; color: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const options: uPlot.Options = {
      title,
      width: Math.max(element.clientWidth, 320),
      height: 220,
      scales: { x: { time: true } },
      series: [{}, { label: unit, stroke: color, width: 2, fill: `${color}22`, value: (_plot, value) => shown(value) }],
      axes: [{}, { label: unit, size: 60 }],
    };
    plot.current = new uPlot(options, [[], []], element);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(element.clientWidth, 320), height: 220 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [title, unit, color]);
  useEffect(() => {
    plot.current?.setData([times, values]);
  }, [times, values]);
  return <div class="chart" ref={box} aria-label={title} />;
}

export function Insights({ database }: { database: DatabaseRef }) {
  const workspace = pathOf('workspaces', database.slug);
  const tenants = useResource(() => api<Tenant[]>('GET', `${workspace}/databases/${encodeURIComponent(database.name)}/tenants`), database.id);
  const [windowName, setWindowName] = useState<WindowName>('15 minutes');
  const [tenantId, setTenantId] = useState('');
  const [window, setWindow] = useState<{ start: string; end: string }>();
  const key = `${database.id} ${windowName} ${tenantId}`;
  const figures = useResource(
    async () => {
      // The window ends with the current minute, so the last point grows as queries run.
      const end = new Date(Math.floor(Date.now() / MINUTE) * MINUTE + MINUTE);
      const start = new Date(end.getTime() - WINDOWS[windowName] * MINUTE);
      const query = new URLSearchParams({ start: start.toISOString(), end: end.toISOString(), granularity: '1m', ...(tenantId ? { tenantId } : {}) });
      const answer = await api<QueryPerformance>('GET', `${workspace}/databases/${encodeURIComponent(database.id)}/insights/query-performance?${query}`);
      setWindow({ start: start.toISOString(), end: end.toISOString() });
      return answer;
    },
    key,
    () => 10_000,
  );
  const points = figures.data?.points ?? [];
  const times = points.map((point) => Date.parse(point.timestamp) / 1000);
  const total = points.reduce((sum, point, index) => sum + point.proxyQueriesPerSecond * ((times[index + 1] ?? Date.parse(window?.end ?? '') / 1000) - times[index]), 0);
  return (
    <Panel title="Insights">
      <div class="inline">
        <label>
          Window{' '}
          <select aria-label="Window" value={windowName} onChange={(event) => setWindowName((event.currentTarget as HTMLSelectElement).value as WindowName)}>
            {Object.keys(WINDOWS).map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          Tenant{' '}
          <select aria-label="Insights tenant" value={tenantId} onChange={(event) => setTenantId((event.currentTarget as HTMLSelectElement).value)}>
            <option value="">Whole database</option>
            {(tenants.data ?? []).map((tenant) => (
              <option key={tenant.id} value={tenant.id}>
                {tenant.name ?? tenant.id}
              </option>
            ))}
          </select>
        </label>
        <button type="button" class="quiet" onClick={figures.reload}>
          Refresh
        </button>
      </div>
      <ErrorLine error={figures.error} />
      <div class="charts" data-start={window?.start} data-end={window?.end} data-tenant={tenantId} data-points={points.length}>
        <p class="summary">
          {Math.round(total)} queries in the window; source: {figures.data?.source ?? '…'}
        </p>
        <Chart title="Queries per second" unit="queries/s" times={times} values={points.map((point) => point.proxyQueriesPerSecond)} color="#0969da" />
        <Chart title="p99 latency" unit="ms" times={times} values={points.map((point) => point.observerP99LatencyMs)} color="#bf3989" />
      </div>
    </Panel>
  );
}

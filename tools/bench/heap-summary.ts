// Heap snapshots compared: what each object kind (V8's node type and constructor name) adds between
// two snapshots of one process, in objects and bytes (self size), divided by a count (the idle
// clients held between them). Used by `bench:idle-clients -- --heap-snapshot`; also runs alone:
// `tsx tools/bench/heap-summary.ts before.heapsnapshot after.heapsnapshot 2000`.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface KindTotals {
  count: number;
  bytes: number;
}

/**
 * Objects and self sizes per kind (`type:name`, names of strings and code folded into their type),
 * each kind also by what holds it (`kind <- holder's kind.edge`, the first reference found).
 */
export function heapKinds(file: string): Map<string, KindTotals> {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const { meta } = snapshot.snapshot;
  const types = meta.node_types[0];
  const width = meta.node_fields.length;
  const typeAt = meta.node_fields.indexOf('type');
  const nameAt = meta.node_fields.indexOf('name');
  const sizeAt = meta.node_fields.indexOf('self_size');
  const edgeCountAt = meta.node_fields.indexOf('edge_count');
  const edgeWidth = meta.edge_fields.length;
  const edgeTypeAt = meta.edge_fields.indexOf('type');
  const edgeNameAt = meta.edge_fields.indexOf('name_or_index');
  const edgeToAt = meta.edge_fields.indexOf('to_node');
  const { nodes, edges, strings } = snapshot;
  const kindOf = (at: number): string => {
    const type = types[nodes[at + typeAt]];
    const named = type === 'object' || type === 'closure' || type === 'native' || type === 'hidden' || type === 'object shape';
    return named ? `${type}:${strings[nodes[at + nameAt]].slice(0, 60)}` : type;
  };
  // The first holder of each node (weak references aside).
  const holder = new Map<number, string>();
  for (let at = 0, edge = 0; at < nodes.length; at += width) {
    const from = kindOf(at);
    for (let n = nodes[at + edgeCountAt]; n > 0; n--, edge += edgeWidth) {
      const edgeType = meta.edge_types[0][edges[edge + edgeTypeAt]];
      if (edgeType === 'weak') continue;
      const to = edges[edge + edgeToAt];
      if (holder.has(to)) continue;
      const name = edgeType === 'element' || edgeType === 'hidden' ? `[]` : String(strings[edges[edge + edgeNameAt]]).slice(0, 40);
      holder.set(to, `${from}.${name}`);
    }
  }
  const kinds = new Map<string, KindTotals>();
  const add = (kind: string, bytes: number) => {
    const totals = kinds.get(kind) ?? { count: 0, bytes: 0 };
    totals.count++;
    totals.bytes += bytes;
    kinds.set(kind, totals);
  };
  for (let at = 0; at < nodes.length; at += width) {
    const kind = kindOf(at);
    add(kind, nodes[at + sizeAt]);
    add(`  ${kind} <- ${holder.get(at) ?? '(root)'}`, nodes[at + sizeAt]);
  }
  return kinds;
}

/** The kinds that grew most between two snapshots, per `per` (objects and bytes each), as lines of a table. */
export function compareHeaps(beforeFile: string, afterFile: string, per: number, top = 120): string[] {
  const before = heapKinds(beforeFile);
  const after = heapKinds(afterFile);
  const rows = [...after].map(([kind, totals]) => {
    const was = before.get(kind) ?? { count: 0, bytes: 0 };
    return { kind, count: (totals.count - was.count) / per, bytes: (totals.bytes - was.bytes) / per };
  });
  rows.sort((a, b) => b.bytes - a.bytes);
  const total = rows.filter((row) => !row.kind.startsWith(' ')).reduce((sum, row) => sum + row.bytes, 0);
  return [
    `JS heap per client (self sizes): ${total.toFixed(0)} bytes`,
    `${'bytes'.padStart(8)} ${'objects'.padStart(8)}  kind`,
    ...rows.filter((row) => Math.abs(row.bytes) >= 8).slice(0, top).map((row) => `${row.bytes.toFixed(0).padStart(8)} ${row.count.toFixed(2).padStart(8)}  ${row.kind}`),
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [beforeFile, afterFile, per = '1'] = process.argv.slice(2);
  console.log(compareHeaps(beforeFile, afterFile, Number(per)).join('\n'));
}

// bench:gateway's report (gateway.ts runs the measurements): the tables of each target's figures,
// medians over the rounds, counting's cost per paired round, and the goals.
import type { PgbenchRun, Target, Workload } from './gateway-pgbench.js';
import { median } from './support.js';

/** What bench:gateway must show: it exits 1 when a goal is not met. */
const GOALS = {
  /** The gateway (no TLS) against PgBouncer (no TLS), every workload. */
  versusPgbouncer: 1,
  /** The gateway (no TLS) against direct, select-only at 8 clients. */
  versusDirect: 0.8,
  /** TPS lost to counting, at most. */
  countingCost: 0.05,
};
export const TARGET_KEYS = ['direct', 'pgbouncer', 'node-relay', 'gateway', 'gateway-uncounted', 'gateway-tls'] as const;
export type TargetKey = (typeof TARGET_KEYS)[number];

export interface BenchTarget {
  key: TargetKey;
  label: string;
  target: Target;
  /** The process in the middle whose CPU time is reported (none for direct). */
  pid?: number;
  /** The gateway's admin URL, for /metrics. */
  adminUrl?: string;
}

export interface Measurement {
  round: number;
  workload: Workload;
  clients: number;
  key: TargetKey;
  run: PgbenchRun;
  /** CPU time of the process in the middle per transaction, in microseconds. */
  proxyCpuMicrosPerTransaction: number | null;
  /** The part of it spent in user mode (the rest is the kernel's: system calls, loopback TCP). */
  proxyUserMicrosPerTransaction: number | null;
  /** Share of both cores busy during the run. */
  machineBusy: number | null;
  /** Cores that processes other than pgbench, PostgreSQL and the target's process used during the run. */
  otherCores: number | null;
}

/** What the report says of how the runs were made. */
export interface ReportSettings {
  seconds: number;
  warmup: number;
  clients: number[];
  workloads: Workload[];
  scale: number;
  rounds: number;
  protocol: string;
  aa: boolean;
}

export const format = {
  tps: (value: number) => value.toFixed(0),
  ms: (value: number) => value.toFixed(3),
  ratio: (value: number) => `${value.toFixed(2)}x`,
  micros: (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(0)}`,
  percent: (value: number) => `${(value * 100).toFixed(1)}%`,
};

/** The median of each figure over the rounds, per workload, client count and target. */
function summarize(measurements: Measurement[]) {
  const cells = new Map<string, Measurement[]>();
  for (const m of measurements) {
    const key = `${m.workload.name}/${m.clients}/${m.key}`;
    cells.set(key, [...(cells.get(key) ?? []), m]);
  }
  return (workload: Workload, clients: number, key: TargetKey) => {
    const runs = cells.get(`${workload.name}/${clients}/${key}`) ?? [];
    const of = (pick: (m: Measurement) => number | null) => {
      const values = runs.map(pick).filter((value): value is number => value !== null);
      return values.length ? median(values) : null;
    };
    return {
      tps: of((m) => m.run.tps)!,
      averageMs: of((m) => m.run.averageMs)!,
      p50Ms: of((m) => m.run.p50Ms)!,
      p99Ms: of((m) => m.run.p99Ms)!,
      proxyCpu: of((m) => m.proxyCpuMicrosPerTransaction),
      proxyUser: of((m) => m.proxyUserMicrosPerTransaction),
      machineBusy: of((m) => m.machineBusy),
      otherCores: of((m) => m.otherCores),
    };
  };
}

/** The counting gateway's and the other's runs of each round, for one workload and client count. */
function pairedRounds(measurements: Measurement[], workload: Workload, clients: number): [Measurement, Measurement][] {
  const of = (key: TargetKey, round: number) => measurements.find((m) => m.round === round && m.workload === workload && m.clients === clients && m.key === key);
  const rounds = [...new Set(measurements.map((m) => m.round))];
  return rounds.flatMap((round) => {
    const [a, b] = [of('gateway', round), of('gateway-uncounted', round)];
    return a && b ? [[a, b] as [Measurement, Measurement]] : [];
  });
}

/** Prints the tables and the goals; answers whether every goal is met. */
export function report(measurements: Measurement[], targets: BenchTarget[], settings: ReportSettings, profiled: boolean): boolean {
  const cell = summarize(measurements);
  const label = (key: TargetKey) => targets.find((t) => t.key === key)!.label;
  console.log(
    `\n## Gateway benchmark: pgbench ${settings.protocol} protocol, -j 2, ${settings.seconds} s per run after a ${settings.warmup} s warm-up, scale ${settings.scale}` +
      `${settings.rounds > 1 ? `, median of ${settings.rounds} rounds` : ''}${profiled ? ', gateways UNDER --cpu-prof' : ''}\n`,
  );
  console.log('2 cores shared by pgbench, PostgreSQL and the process in the middle (PgBouncer or the gateway), over loopback.');
  console.log('Added latency is per statement (select-only: 1 a transaction; TPC-B-like: 7, BEGIN and END included), against direct.');
  console.log('Proxy CPU: CPU time of PgBouncer or the gateway process per transaction, of which in user mode (the rest is the kernel:');
  console.log('system calls and loopback TCP, about the same for both). Others: cores used during the run by');
  console.log('processes other than pgbench, this PostgreSQL and the target (another test run on the machine skews that run).\n');
  console.log('| workload | clients | target | TPS | avg ms | p50 ms | p99 ms | vs direct | vs pgbouncer | added p50 µs/stmt | added p99 µs/stmt | proxy CPU µs/txn | machine busy | others (cores) |');
  console.log('| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const workload of settings.workloads) {
    for (const clients of settings.clients) {
      const direct = cell(workload, clients, 'direct');
      const bouncer = cell(workload, clients, 'pgbouncer');
      for (const key of TARGET_KEYS) {
        const c = cell(workload, clients, key);
        const added = (mine: number, theirs: number) => (key === 'direct' ? '' : format.micros(((mine - theirs) * 1000) / workload.statements));
        console.log(
          `| ${workload.name} | ${clients} | ${label(key)} | ${format.tps(c.tps)} | ${format.ms(c.averageMs)} | ${format.ms(c.p50Ms)} | ${format.ms(c.p99Ms)} | ` +
            `${format.ratio(c.tps / direct.tps)} | ${format.ratio(c.tps / bouncer.tps)} | ${added(c.p50Ms, direct.p50Ms)} | ${added(c.p99Ms, direct.p99Ms)} | ` +
            `${c.proxyCpu === null ? '' : `${c.proxyCpu.toFixed(0)} (${c.proxyUser?.toFixed(0)} user)`} | ${c.machineBusy === null ? '' : format.percent(c.machineBusy)} | ` +
            `${c.otherCores === null ? '' : c.otherCores.toFixed(2)} |`,
        );
      }
    }
  }

  // TPS of separate runs on a shared 2-core machine move by several percent from run to run; the
  // gateway's own CPU time per transaction is the steadier measure of what counting adds.
  // With several rounds, the cost is also taken per round (the two ran one after the other, in the
  // same conditions) and the median of those paired costs is the figure the goal reads: a round
  // disturbed by something else then moves one pair, not the whole comparison.
  const pair = settings.aa ? 'A/A: gateway vs its identical twin, both counting' : 'counting (gateway vs gateway-uncounted)';
  const [one, other] = settings.aa ? ['gateway', 'twin'] : ['counted', 'uncounted'];
  console.log(
    `\n| ${pair} | clients | ${one} TPS | ${other} TPS | TPS cost | ${one} p50 ms | ${other} p50 ms | gateway CPU µs/txn ${one} / ${other} | CPU cost | ` +
      `paired TPS costs by round | paired CPU costs by round |`,
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const costs: number[] = [];
  for (const workload of settings.workloads) {
    for (const clients of settings.clients) {
      const counted = cell(workload, clients, 'gateway');
      const uncounted = cell(workload, clients, 'gateway-uncounted');
      const paired = pairedRounds(measurements, workload, clients);
      const tpsCosts = paired.map(([a, b]) => 1 - a.run.tps / b.run.tps);
      const cpuCosts = paired.flatMap(([a, b]) => (a.proxyCpuMicrosPerTransaction && b.proxyCpuMicrosPerTransaction ? [a.proxyCpuMicrosPerTransaction / b.proxyCpuMicrosPerTransaction - 1] : []));
      const cost = tpsCosts.length > 1 ? median(tpsCosts) : 1 - counted.tps / uncounted.tps;
      costs.push(cost);
      const list = (values: number[]) => (values.length > 1 ? `${values.map(format.percent).join(', ')} (median ${format.percent(median(values))})` : '');
      console.log(
        `| ${workload.name} | ${clients} | ${format.tps(counted.tps)} | ${format.tps(uncounted.tps)} | ${format.percent(1 - counted.tps / uncounted.tps)} | ` +
          `${format.ms(counted.p50Ms)} | ${format.ms(uncounted.p50Ms)} | ${counted.proxyCpu?.toFixed(0) ?? ''} / ${uncounted.proxyCpu?.toFixed(0) ?? ''} | ` +
          `${counted.proxyCpu !== null && uncounted.proxyCpu ? format.percent(counted.proxyCpu / uncounted.proxyCpu - 1) : ''} | ${list(tpsCosts)} | ${list(cpuCosts)} |`,
      );
    }
  }

  // What the gateway costs above the floor Node sets, and what that floor costs against PgBouncer.
  console.log('\n| workload | clients | bare Node relay vs pgbouncer | gateway vs bare Node relay | relay CPU µs/txn | gateway CPU µs/txn |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const workload of settings.workloads) {
    for (const clients of settings.clients) {
      const [bouncer, relay, gateway] = (['pgbouncer', 'node-relay', 'gateway'] as const).map((key) => cell(workload, clients, key));
      console.log(
        `| ${workload.name} | ${clients} | ${format.ratio(relay.tps / bouncer.tps)} | ${format.ratio(gateway.tps / relay.tps)} | ` +
          `${relay.proxyCpu?.toFixed(0) ?? ''} | ${gateway.proxyCpu?.toFixed(0) ?? ''} |`,
      );
    }
  }

  const goals: { what: string; met: boolean; detail: string }[] = [];
  for (const workload of settings.workloads) {
    for (const clients of settings.clients) {
      const ratio = cell(workload, clients, 'gateway').tps / cell(workload, clients, 'pgbouncer').tps;
      goals.push({ what: `gateway >= pgbouncer, ${workload.name}, ${clients} clients`, met: ratio >= GOALS.versusPgbouncer, detail: format.ratio(ratio) });
    }
  }
  const selectOnly = settings.workloads.find((w) => w.script === 'select-only');
  if (selectOnly && settings.clients.includes(8)) {
    const ratio = cell(selectOnly, 8, 'gateway').tps / cell(selectOnly, 8, 'direct').tps;
    goals.push({ what: `gateway >= ${GOALS.versusDirect}x direct, select-only, 8 clients`, met: ratio >= GOALS.versusDirect, detail: format.ratio(ratio) });
  }
  const worst = Math.max(...costs);
  const how = settings.rounds > 1 ? 'median of paired rounds, worst workload' : 'worst workload';
  if (!settings.aa) goals.push({ what: `counting costs < ${format.percent(GOALS.countingCost)} (${how})`, met: worst < GOALS.countingCost, detail: format.percent(worst) });
  console.log('\n| goal | measured | met |');
  console.log('| --- | ---: | --- |');
  for (const goal of goals) console.log(`| ${goal.what} | ${goal.detail} | ${goal.met ? 'yes' : 'NO'} |`);
  return goals.every((goal) => goal.met);
}


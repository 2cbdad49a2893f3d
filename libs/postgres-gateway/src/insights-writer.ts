import { randomUUID } from 'node:crypto';
import type { QueryMinuteSink } from '@platform/domain';
import { PeriodicWork } from '@platform/process';
import type { GatewayLog } from './context.js';
import type { QueryCounters } from './query-counters.js';

/**
 * Writes the gateway's counted minutes to the control plane every `flushMs`, and once more when
 * it stops: the current minute as far as it has come (rewritten at the next flush), and the minutes
 * before it, forgotten once written. A write that fails is retried at the next flush with
 * everything since; a crash loses at most `flushMs` of figures. Each gateway process writes rows
 * of its own (a fresh id per start), so replicas and restarts add up instead of overwriting.
 */
export class InsightsWriter {
  readonly gatewayId = randomUUID();
  private readonly loop: PeriodicWork;

  constructor(
    private readonly counters: QueryCounters,
    private readonly sink: QueryMinuteSink,
    flushMs: number,
    private readonly log: GatewayLog,
  ) {
    this.loop = new PeriodicWork(() => this.write(), {
      intervalMs: flushMs,
      firstPass: 'after-interval',
      onError: (error) => log.warn({ err: error }, 'could not write query minutes; retrying at the next flush'),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** After the last connection has closed: its queries are in the final write. */
  async stop(): Promise<void> {
    await this.loop.stop();
    await this.write();
  }

  private async write(): Promise<void> {
    const now = new Date();
    const currentMinute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
    const rows = this.counters.minutes();
    try {
      await this.sink.save(this.gatewayId, rows);
      this.counters.forgetBefore(currentMinute);
    } catch (error) {
      this.log.warn({ err: error, minutes: rows.length }, 'could not write query minutes; retrying at the next flush');
    }
  }
}

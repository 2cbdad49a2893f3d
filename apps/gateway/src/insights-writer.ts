import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { QueryMinuteSink } from '@platform/domain';
import type { QueryCounters } from '@platform/postgres-gateway';

/**
 * Writes the gateway's counted minutes to the control plane every `flushMs`, and once more when
 * it stops: the current minute as far as it has come (rewritten at the next flush), and the minutes
 * before it, forgotten once written. A write that fails is retried at the next flush with
 * everything since; a crash loses at most `flushMs` of figures. Each gateway process writes rows
 * of its own (a fresh id per start), so replicas and restarts add up instead of overwriting.
 */
export class InsightsWriter {
  readonly gatewayId = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly counters: QueryCounters,
    private readonly sink: QueryMinuteSink,
    private readonly flushMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  /** Writes what is counted now; flushes never overlap. */
  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
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

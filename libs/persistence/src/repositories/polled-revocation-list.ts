import type { MikroORM } from '@mikro-orm/postgresql';
import type { RevocationList } from '@platform/domain';
import { PeriodicWork } from '@platform/process';

const REVOCATION_OVERLAP_MS = 60_000;

/**
 * What a resource server (apps/api) knows of revoked families: it reads the families revoked
 * since its last look every `pollMs`, so a revocation takes effect there within that bound.
 * Families revoked longer ago than `retainSeconds` (the longest access-token lifetime) are
 * forgotten: every token of theirs has expired by then.
 */
export class PolledRevocationList implements RevocationList {
  private revoked = new Map<string, number>();
  private since = new Date(0);
  private readonly loop: PeriodicWork;

  constructor(
    private readonly orm: MikroORM,
    private readonly options: { pollMs: number; retainSeconds: number; onError?: (error: unknown) => void },
  ) {
    this.loop = new PeriodicWork(() => this.poll(), { intervalMs: options.pollMs, firstPass: 'after-interval', onError: (error) => options.onError?.(error) });
  }

  isRevoked(familyId: string): boolean {
    return this.revoked.has(familyId);
  }

  /** Loads what is revoked now (failing if it cannot), then keeps polling until `stop`. */
  async start(): Promise<void> {
    this.since = new Date(Date.now() - this.options.retainSeconds * 1000);
    await this.poll();
    this.loop.start();
  }

  /** Waits for a poll under way: none reads a closed control plane. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  async poll(): Promise<void> {
    // `revoked` is stamped when its transaction starts, and a slow one may commit after a later
    // one was read: each poll re-reads a minute back (the partial index keeps that cheap), and
    // revoking statements are single statements far shorter than that.
    const from = new Date(this.since.getTime() - REVOCATION_OVERLAP_MS);
    const rows = await this.orm.em
      .getConnection()
      .execute<{ id: string; revoked: Date | string }[]>(`select id, revoked from token_families where revoked >= ? order by revoked`, [from], 'all');
    for (const row of rows) {
      const at = new Date(row.revoked).getTime();
      this.revoked.set(row.id, at);
      if (at > this.since.getTime()) this.since = new Date(at);
    }
    const horizon = Date.now() - this.options.retainSeconds * 1000;
    for (const [id, at] of this.revoked) if (at < horizon) this.revoked.delete(id);
  }
}

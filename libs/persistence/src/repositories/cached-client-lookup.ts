import type { OAuthClient } from '@platform/domain';

/** What the token endpoint needs of a client: the shape of `OAuthClientRepository.findForAuthentication`. */
export type ClientForAuthentication = { client: OAuthClient; secretDigest: string | null };

export type ClientLoader = (id: string) => Promise<ClientForAuthentication | null>;

export interface CachedClientLookupOptions {
  /**
   * How long a found client is served from memory: the staleness bound. A secret rotated or a
   * client deleted elsewhere keeps working on this process for up to this long. Default 5000.
   */
  ttlMs?: number;
  /** How long an unknown id is remembered as unknown; 0 never remembers. Default 1000. */
  missTtlMs?: number;
  /** Found clients kept at most; past it the entry closest to expiry goes. Default 10000. */
  maxEntries?: number;
  /**
   * Unknown ids kept at most, in a store of their own so that a flood of made-up ids can neither
   * grow memory nor push real clients out. Default 1000.
   */
  maxMisses?: number;
  /** Milliseconds since any fixed point; for tests. Default `Date.now`. */
  now?: () => number;
}

interface Entry {
  value: ClientForAuthentication | null;
  expires: number;
}

/**
 * Serves client lookups for the token endpoint from memory for a bounded time, so that a client
 * asking for tokens over and over does not cost a query each time. It only remembers what the
 * loader answered: checking the secret stays with the caller (the domain, in constant time).
 * Concurrent lookups of an id that is not cached share one load; a failed load is not remembered.
 */
export class CachedClientLookup {
  private readonly found = new Map<string, Entry>();
  private readonly missing = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<ClientForAuthentication | null>>();
  private readonly ttlMs: number;
  private readonly missTtlMs: number;
  private readonly maxEntries: number;
  private readonly maxMisses: number;
  private readonly now: () => number;

  constructor(
    private readonly load: ClientLoader,
    options: CachedClientLookupOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 5_000;
    this.missTtlMs = options.missTtlMs ?? 1_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.maxMisses = options.maxMisses ?? 1_000;
    this.now = options.now ?? Date.now;
    if (!(this.ttlMs >= 0 && this.missTtlMs >= 0)) throw new RangeError('ttlMs and missTtlMs must be zero or more');
    if (!(Number.isInteger(this.maxEntries) && this.maxEntries > 0 && Number.isInteger(this.maxMisses) && this.maxMisses > 0)) {
      throw new RangeError('maxEntries and maxMisses must be positive integers');
    }
  }

  /** The client with this id and its secret's digest, or null when there is no live client. */
  find(id: string): Promise<ClientForAuthentication | null> {
    const now = this.now();
    const cached = this.fresh(this.found, id, now) ?? this.fresh(this.missing, id, now);
    if (cached) return Promise.resolve(cached.value);
    const pending = this.loading.get(id);
    if (pending) return pending;
    // A loader that throws instead of rejecting still ends in a rejected promise.
    const loaded = new Promise<ClientForAuthentication | null>((resolve) => resolve(this.load(id))).then(
      (value) => {
        // Not stored if forget() or clear() ran meanwhile: the answer may predate the change.
        if (this.loading.get(id) === loaded) {
          this.loading.delete(id);
          this.remember(id, value);
        }
        return value;
      },
      (error: unknown) => {
        if (this.loading.get(id) === loaded) this.loading.delete(id);
        throw error;
      },
    );
    this.loading.set(id, loaded);
    return loaded;
  }

  /** Drops what is known of `id`, e.g. after this process rotated its secret or deleted it. */
  forget(id: string): void {
    this.found.delete(id);
    this.missing.delete(id);
    this.loading.delete(id);
  }

  /** Drops everything, e.g. when change notifications may have been missed. */
  clear(): void {
    this.found.clear();
    this.missing.clear();
    this.loading.clear();
  }

  /** Entries held now (found, missing); for tests and metrics. */
  get size(): { found: number; missing: number } {
    return { found: this.found.size, missing: this.missing.size };
  }

  private fresh(store: Map<string, Entry>, id: string, now: number): Entry | undefined {
    const entry = store.get(id);
    if (!entry) return undefined;
    if (entry.expires > now) return entry;
    store.delete(id);
    return undefined;
  }

  private remember(id: string, value: ClientForAuthentication | null): void {
    const [store, ttl, max] = value ? [this.found, this.ttlMs, this.maxEntries] : [this.missing, this.missTtlMs, this.maxMisses];
    if (ttl === 0) return;
    store.delete(id);
    // Every entry of a store lives equally long, so the first inserted is the closest to expiry.
    while (store.size >= max) store.delete(store.keys().next().value as string);
    store.set(id, { value, expires: this.now() + ttl });
  }
}

// The test OpenID Provider's storage adapter (oidc-provider's adapter interface). Our own rather than
// the bundled memory adapter: that one warns on every start, and through it clients could only be
// configured up front, whereas tests register clients after the provider has started.

type Payload = Record<string, unknown>;

interface StoredPayload {
  payload: Payload;
  /** Epoch milliseconds; Infinity when the provider gave no lifetime. */
  expiresAt: number;
}

/** Every model's records in one map, keyed `Model:id`, for one provider instance. */
export type ProviderStore = Map<string, StoredPayload>;

/** Stores a client's metadata where the provider's `Client.find` looks when it has no static client by that id. */
export function storeClient(store: ProviderStore, metadata: Payload & { client_id: string }): void {
  store.set(`Client:${metadata.client_id}`, { payload: metadata, expiresAt: Infinity });
}

/** The adapter factory oidc-provider calls once per model name. */
export function storeAdapterFactory(store: ProviderStore): (model: string) => ModelAdapter {
  return (model) => new ModelAdapter(model, store);
}

class ModelAdapter {
  constructor(
    private readonly model: string,
    private readonly store: ProviderStore,
  ) {}

  async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
    const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity;
    this.store.set(this.key(id), { payload, expiresAt });
  }

  async find(id: string): Promise<Payload | undefined> {
    return this.live(this.key(id));
  }

  async findByUid(uid: string): Promise<Payload | undefined> {
    return this.findWhere((payload) => payload.uid === uid);
  }

  async findByUserCode(userCode: string): Promise<Payload | undefined> {
    return this.findWhere((payload) => payload.userCode === userCode);
  }

  async consume(id: string): Promise<void> {
    const payload = this.live(this.key(id));
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id: string): Promise<void> {
    this.store.delete(this.key(id));
  }

  /** Revoking a grant removes every token of any model issued under it. */
  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [key, stored] of this.store) {
      if (stored.payload.grantId === grantId) this.store.delete(key);
    }
  }

  private key(id: string): string {
    return `${this.model}:${id}`;
  }

  /** Expiry is checked on read, so the store holds no timers that would keep the process alive. */
  private live(key: string): Payload | undefined {
    const stored = this.store.get(key);
    if (!stored) return undefined;
    if (stored.expiresAt <= Date.now()) {
      this.store.delete(key);
      return undefined;
    }
    return stored.payload;
  }

  private findWhere(matches: (payload: Payload) => boolean): Payload | undefined {
    const prefix = `${this.model}:`;
    for (const key of this.store.keys()) {
      if (!key.startsWith(prefix)) continue;
      const payload = this.live(key);
      if (payload && matches(payload)) return payload;
    }
    return undefined;
  }
}

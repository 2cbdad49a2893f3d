// The names of a pool's protocol-level prepared statements: one per query text and parameter types,
// shared by the pool's clients (pooled-statements.ts maps each client's own names to these).

/** The pool's name of each (query text, parameter types), shared by its clients. */
export class StatementNames {
  private readonly names = new Map<string, string>();
  /** Statements a server has parsed without an error: a client's Parse of one is answered without a server connection. */
  private readonly parsed = new Set<string>();
  private next = 1;

  wasParsed(name: string): boolean {
    return this.parsed.has(name);
  }

  parsedOnce(name: string): void {
    this.parsed.add(name);
  }

  nameOf(key: string): string {
    let name = this.names.get(key);
    if (!name) {
      name = `_pool_${this.next++}`;
      this.names.set(key, name);
    }
    return name;
  }
}


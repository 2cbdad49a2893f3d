/**
 * Who restores which entry of a dump. A database holds two kinds of objects: the platform's (its
 * built-in schema, owned by the cluster's superuser) and the customer's (owned by the database's
 * roles and credentials). PostgreSQL runs customer code while it restores customer objects (CHECK
 * and DOMAIN constraints and stored generated columns as rows are copied in; index expressions,
 * partial-index predicates and exclusion constraints as indexes are built), with the rights of the
 * session's login. So customer entries are restored by a login that holds no more than the
 * database's own roles, and only the platform's entries by a superuser, at moments when nothing of
 * the customer's can run:
 *   1. `platform`: the database itself and the platform's entries (schemas, built-in tables, their
 *      rows, indexes, constraints and policies), superuser, before any customer object exists;
 *   2. `customer`: every entry a customer role owns, by the restoring login;
 *   3. `last`: the platform's event triggers, superuser, once the customer's objects are in place
 *      (they would otherwise fire on the restore's own DDL, and refuse the policies it recreates).
 * Nothing in 1 depends on the customer's objects, and 3 runs no code of theirs.
 *
 * Extensions carry no owner in a dump. A credential creates them (built-in schema step 13 allows a
 * list of trusted ones), and they may live in a customer's schema and carry types the customer's
 * tables use, so they are the customer's entries, in their place among them; but restored as the
 * login they would be its own, and go with it. `customerRuns` cuts the customer's entries, in
 * order, at each extension: those runs are restored as the database's owner role (`asOwner`).
 */
export interface RestorePlan {
  platform: string[];
  customer: string[];
  /** `customer` in consecutive runs, the extensions' entries apart (restored as the owner role). */
  customerRuns: { lines: string[]; asOwner: boolean }[];
  last: string[];
  /** The customer roles that own entries: the restoring login needs to act as each. */
  customerOwners: string[];
}

export interface RestoreOwners {
  /** Owners whose entries are the platform's: the cluster's superusers and `pg_database_owner`. */
  platform: ReadonlySet<string>;
  /** Owners whose entries are the customer's: the database's own roles and its credentials' roles. */
  customer: ReadonlySet<string>;
}

/** An event trigger's entry, or a comment or security label on one (which must follow it). */
const EVENT_TRIGGER = /^(EVENT TRIGGER|(COMMENT|SECURITY LABEL) - EVENT TRIGGER) /;

/** A line of `pg_restore --list`: `<dumpId>; <catalog oid> <oid> <type> <schema> <name> <owner>`. */
const ENTRY = /^(\d+); \d+ \d+ (.*) (\S*)$/;

/** An extension's entry, or a comment on one: a dump records no owner for either. */
const EXTENSION = /^(EXTENSION - |COMMENT - EXTENSION )"?[a-z_][a-z0-9_-]*"?$/;

/**
 * Splits the entries of `pg_restore --list --create` (kept in their order, which respects
 * dependencies) by owner. An entry with no owner, or one owned by a role that is neither the
 * platform's nor the customer's, is refused: the move would not know who may restore it.
 */
export function planRestore(list: string, owners: RestoreOwners): RestorePlan {
  const plan: RestorePlan = { platform: [], customer: [], customerRuns: [], last: [], customerOwners: [] };
  const toCustomer = (line: string, asOwner: boolean) => {
    plan.customer.push(line);
    const run = plan.customerRuns.at(-1);
    if (run && run.asOwner === asOwner) run.lines.push(line);
    else plan.customerRuns.push({ lines: [line], asOwner });
  };
  const customerOwners = new Set<string>();
  for (const line of list.split('\n')) {
    if (line.trim() === '' || line.startsWith(';')) continue;
    const entry = ENTRY.exec(line);
    if (!entry) throw new Error(`unexpected line in the dump's table of contents: ${line.slice(0, 200)}`);
    const [, , kind, owner] = entry;
    if (owners.platform.has(owner)) {
      (EVENT_TRIGGER.test(kind) ? plan.last : plan.platform).push(line);
    } else if (owners.customer.has(owner)) {
      toCustomer(line, false);
      customerOwners.add(owner);
    } else if (owner === '' && EXTENSION.test(kind)) {
      toCustomer(line, true);
    } else {
      throw new Error(`dump entry ${entry[1]} is owned by '${owner}', neither the platform's nor the database's roles: refusing to restore it`);
    }
  }
  plan.customerOwners = [...customerOwners].sort();
  return plan;
}

/**
 * A schema as SQL, less what differs between two faithful copies: comments, blank lines, pg_dump's
 * per-run restrict key, and the order of a policy's roles (pg_dump lists them in the order of the
 * roles' catalog, which differs on a server where they were created in another order).
 */
export function comparable(schema: string): string[] {
  return schema
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('--') && !/^\\(un)?restrict /.test(line))
    .map((line) => line.replace(POLICY_ROLES, (_, head: string, roles: string, tail: string) => head + roles.split(', ').sort().join(', ') + tail));
}

/** A policy's `TO` list in pg_dump's CREATE POLICY line. */
const POLICY_ROLES = /^(CREATE POLICY .*? TO )((?:[^ ,]+, )*[^ ,]+)( USING \(| WITH CHECK \(|;$)/;

/**
 * Refuses a restored schema that is not the source's. Customer code runs while the customer's
 * objects are restored, as the mover (it holds the owner role), before the platform's event
 * triggers are back: it could drop a tenant-aware table's policy, unforce row-level security, make
 * a function SECURITY DEFINER or create what the guards refuse. Anything it created is gone with
 * the mover's DROP OWNED; anything it changed shows here, and the move fails with the source kept.
 */
export function assertSameSchema(source: string, restored: string): void {
  const [before, after] = [comparable(source), comparable(restored)];
  const at = before.findIndex((line, index) => line !== after[index]);
  const differs = at === -1 ? (after.length === before.length ? -1 : before.length) : at;
  if (differs === -1) return;
  const show = (line: string | undefined) => (line === undefined ? 'nothing' : `'${line.slice(0, 200)}'`);
  throw new Error(
    `the restored schema differs from the source's (code of the database ran while it was restored and changed it): ` +
      `at line ${differs + 1}, the source has ${show(before[differs])}, the copy ${show(after[differs])}`,
  );
}

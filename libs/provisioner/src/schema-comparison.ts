/** A schema as SQL, less what differs between two faithful copies: comments, blank lines, pg_dump's per-run restrict key. */
export function comparable(schema: string): string[] {
  return schema.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('--') && !/^\\(un)?restrict /.test(line));
}

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

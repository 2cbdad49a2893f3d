/**
 * A message that reaches developers (an instance's health, its failure) without the machine's
 * folders: each absolute path is cut down to its last part, which is what says what went wrong
 * (`postgresql.conf`, `pg_wal`), where the rest would tell the platform's layout to anyone.
 */
export function withoutPaths(text: string): string {
  return text.replace(/(^|[\s"'(=])\/(?:[^\s"'()/]+\/)*([^\s"'()/]*)/g, (_match, before: string, last: string) => `${before}…/${last}`);
}

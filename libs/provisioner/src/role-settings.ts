/**
 * One of a role's settings as pg_db_role_setting stores it (`name=value`). The name is spliced into
 * `ALTER ROLE ... SET` as it is, so anything but a plain (possibly dotted) setting name is refused;
 * the value, everything after the first `=`, is passed as a literal.
 */
export function parseRoleSetting(roleName: string, setting: string): { name: string; value: string } {
  const [, name, value] = /^([A-Za-z_][A-Za-z0-9_.]*)=(.*)$/s.exec(setting) ?? [];
  if (name === undefined || value === undefined) throw new Error(`unexpected setting of role ${roleName}: ${setting.slice(0, 100)}`);
  return { name, value };
}

// What a pooled client's session holds, kept by the gateway since its server connections are shared:
// the tenant named at login, the settings of its startup packet, and the settings the server reported
// for it after a transaction that ran SET or RESET (pooled-hand-over.ts asks). Values are never taken
// from the client's SQL text: the server says what the session holds.
import { TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING, USER_CONTEXT_SETTING } from '@platform/domain';
import { isTenantParameter, startupSettings } from './startup-options.js';
import type { LoginRequest } from './startup.js';

/** Startup parameters the gateway handles itself rather than as settings. */
const NOT_SETTINGS = new Set(['user', 'database', 'options', 'replication']);
/** A setting's name as PostgreSQL takes it (a custom one has one dot); anything else is left out. */
const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$/;

/** The settings the platform's SQL reads: the server is always asked for them, set or not (custom settings are listed nowhere). */
export const PLATFORM_SETTINGS: readonly string[] = [TENANT_CONTEXT_SETTING, TENANT_CONTEXT_ALIAS, USER_CONTEXT_SETTING];

export function isSettingName(name: string): boolean {
  return SETTING_NAME.test(name);
}

/** A string literal that means the same whatever standard_conforming_strings is. */
export const literal = (value: string): string => `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

const NO_SETTINGS: ReadonlyMap<string, string> = new Map();

/**
 * CommandComplete tags after which the server is asked what the session holds; after the resetting
 * ones, the login's settings are given back first.
 */
const SETTING_TAGS = new Set(['SET', 'RESET', 'DISCARD ALL']);
const RESETTING_TAGS = new Set(['RESET', 'DISCARD ALL']);
/** The tags' lengths: most tags are looked at no further. */
export const SETTING_TAG_LENGTHS = new Set([...SETTING_TAGS].map((tag) => tag.length));
/** The statements of a transaction kept for the names of the custom settings it may set: its first ones. */
const KEPT_STATEMENTS = 32;

/** Clients of one application send the same startup settings: their (never changed) maps are shared, up to a bound. */
const SHARED_DEFAULTS_MAX = 1_000;
const sharedDefaultsByContent = new Map<string, ReadonlyMap<string, string>>();

function sharedDefaults(defaults: Map<string, string>): ReadonlyMap<string, string> {
  // NUL cannot occur in a startup packet's names and values: the key is unambiguous (tenants stay apart).
  const content = [...defaults].flat().join('\0');
  const shared = sharedDefaultsByContent.get(content);
  if (shared) return shared;
  // Full (many tenants named at login, say): started again rather than grown without bound.
  if (sharedDefaultsByContent.size >= SHARED_DEFAULTS_MAX) sharedDefaultsByContent.clear();
  sharedDefaultsByContent.set(content, defaults);
  return defaults;
}

/**
 * One pooled client's session state: every setting it holds, by name (lower case), with its value as
 * PostgreSQL would take it from `set_config` (so `search_path=a,b` is two schemas). Its identity is
 * what a server connection's owner compares. Most clients set nothing after login: their startup
 * settings are one shared map.
 */
export class PooledClientState {
  private values: ReadonlyMap<string, string>;
  /** What its login set: RESET brings these back, as it brings back a startup packet's settings. */
  readonly defaults: ReadonlyMap<string, string>;
  /** What the server's tags said of the current transaction: nothing of the settings, SET (ask what the session holds), or RESET / DISCARD ALL (give the login's settings back, then ask). */
  private change: 'none' | 'set' | 'reset' = 'none';
  /** The transaction's first simple queries and Parses, until its end: the names of custom settings a SET made come from them. */
  private statements: Buffer[] | null = null;

  constructor(login: Pick<LoginRequest, 'parameters' | 'options' | 'tenantSetting'>, tenantId: string | null) {
    const defaults = new Map<string, string>();
    for (const [name, value] of login.parameters) {
      if (NOT_SETTINGS.has(name) || name.startsWith('_pq_.') || isTenantParameter(name) || !isSettingName(name)) continue;
      defaults.set(name.toLowerCase(), value);
    }
    for (const [name, value] of startupSettings(login.options)) if (isSettingName(name)) defaults.set(name.toLowerCase(), value);
    if (tenantId !== null) defaults.set((login.tenantSetting ?? TENANT_CONTEXT_SETTING).toLowerCase(), tenantId);
    this.defaults = defaults.size > 0 ? sharedDefaults(defaults) : NO_SETTINGS;
    this.values = this.defaults;
  }

  /** Every setting the client's session holds now, by name, in the order they are applied. */
  settings(): ReadonlyMap<string, string> {
    return this.values;
  }

  /** A simple query or Parse of the client's went to the server. */
  sent(message: Buffer): void {
    if ((this.statements?.length ?? 0) < KEPT_STATEMENTS) (this.statements ??= []).push(message);
  }

  /** A CommandComplete tag of the client's transaction (only those of SETTING_TAG_LENGTHS need come). */
  tagged(tag: string): void {
    if (RESETTING_TAGS.has(tag)) this.change = 'reset';
    else if (tag === 'SET' && this.change === 'none') this.change = 'set';
  }

  /** The transaction that ended set or reset something: the server is to be asked what the session holds. */
  get reportDue(): boolean {
    return this.change !== 'none';
  }

  /** The transaction ended with nothing to ask. */
  transactionEnded(): void {
    this.statements = null;
  }

  /**
   * The question for the server (reportedSettingsSql) once a transaction that set or reset something
   * has ended: custom settings' names from its statements and the client's known ones, the login's
   * settings given back first after a RESET.
   */
  reportQuestion(): string {
    const restore = this.change === 'reset' ? this.defaults : null;
    const names = [...this.values.keys(), ...this.defaults.keys(), ...customSettingNames(this.statements ?? [])];
    this.change = 'none';
    this.statements = null;
    return reportedSettingsSql(names, restore);
  }

  /** What the server reported of the client's session (reportQuestion's rows). */
  reported(rows: (string | null)[][]): void {
    const settings = readReportedSettings(rows, this.values);
    this.values = settings.size > 0 ? settings : NO_SETTINGS;
  }
}

/** `set name`, `set session name` or `reset name` where the name is a custom setting's (with a dot; the server lists every other). */
const CUSTOM_SETTING_NAMED = /\b(?:set|reset)\s+(?:session\s+)?([a-z_][a-z0-9_$]*\.[a-z_][a-z0-9_$]*)/gi;

/**
 * The custom settings a transaction's statements may have set: names to ask the server about, since it
 * lists custom settings nowhere. Only names: what a session holds is the server's answer for them (a
 * name found in a string or a comment is asked about, and answered unset, and one missed is a setting of
 * the client's own not carried to its next server connection, never another client's).
 */
export function customSettingNames(messages: readonly Buffer[]): string[] {
  const names = new Set<string>();
  for (const message of messages) {
    // A simple Query is its text; a Parse is a statement's name, then its text.
    const text = message.toString('utf8', 5, Math.min(message.length - 1, 5 + 65_536));
    for (const match of text.matchAll(CUSTOM_SETTING_NAMED)) names.add(match[1].toLowerCase());
  }
  return [...names];
}

/**
 * What the server says a client's session holds after a transaction that set or reset something:
 * every setting whose value comes from the session (SET, set_config), the platform's own settings and
 * the client's known ones (custom settings are listed nowhere: the server is asked for them by name),
 * and the role. After a RESET or DISCARD ALL (`restore`: the client's login settings), a login
 * setting the session no longer has is given back first, as PostgreSQL's RESET brings back what the
 * startup packet set: a pooled server session's own startup set none of them.
 */
export function reportedSettingsSql(known: Iterable<string>, restore: ReadonlyMap<string, string> | null = null): string {
  const names = [...new Set([...PLATFORM_SETTINGS, ...known])].filter((name) => name !== 'role' && isSettingName(name));
  const restored = [...(restore ?? [])].filter(([name]) => name !== 'role' && isSettingName(name));
  const restoring =
    restored.length === 0
      ? ''
      : `SELECT pg_catalog.set_config(d.n, d.v, false) FROM (VALUES ${restored.map(([name, value]) => `(${literal(name)}, ${literal(value)})`).join(', ')}) AS d (n, v) ` +
        'LEFT JOIN pg_catalog.pg_settings AS s ON s.name OPERATOR(pg_catalog.=) d.n ' +
        "WHERE CASE WHEN s.name IS NULL THEN COALESCE(pg_catalog.current_setting(d.n, true), '') OPERATOR(pg_catalog.=) '' ELSE s.source OPERATOR(pg_catalog.<>) 'session' END; ";
  return (
    restoring +
    "SELECT name, pg_catalog.current_setting(name) FROM pg_catalog.pg_settings WHERE source OPERATOR(pg_catalog.=) 'session' " +
    `UNION ALL SELECT n, pg_catalog.current_setting(n, true) FROM pg_catalog.unnest(ARRAY[${names.map(literal).join(', ')}]::pg_catalog.text[]) AS n ` +
    "UNION ALL SELECT 'role', pg_catalog.current_setting('role');"
  );
}

/** The settings of reportedSettingsSql's rows, in the order the client's were applied first (a custom one never set is left out; one set to nothing is kept, as the session endpoint keeps it). */
export function readReportedSettings(rows: (string | null)[][], before: ReadonlyMap<string, string>): Map<string, string> {
  const reported = new Map<string, string>();
  for (const row of rows) {
    // The rows of the restoring statement before it have one column.
    if (row.length !== 2) continue;
    const [name, value] = row;
    if (name === null || value === null) continue;
    const key = name.toLowerCase();
    if (key === 'role' && value === 'none') continue;
    reported.set(key, value);
  }
  const ordered = new Map<string, string>();
  for (const name of before.keys()) if (reported.has(name)) ordered.set(name, reported.get(name)!);
  for (const [name, value] of reported) if (!ordered.has(name)) ordered.set(name, value);
  return ordered;
}

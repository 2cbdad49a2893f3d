// What a pooled client's session is made of, kept by the gateway since its server connections are
// shared: the tenant named at login, the settings of its startup packet, and the plain SETs it ran
// outside a transaction. Whenever a server connection passes to a client other than the one it last
// served, that state is rebuilt there (after a reset of everything a session can leave behind) in one
// pipelined simple query whose answers the client never sees.
import { TENANT_CONTEXT_SETTING } from '@platform/domain';
import { isTenantParameter } from './startup-options.js';
import type { LoginRequest } from './startup.js';

/**
 * What a previous client may have left on a server connection, undone: its settings (RESET ALL,
 * which leaves the role alone, hence RESET ROLE), open cursors (WITH HOLD ones too), LISTEN, session
 * advisory locks, temporary tables and sequence state. Not DEALLOCATE ALL: the gateway's own
 * prepared statements are shared by the pool's clients (SQL-level PREPARE is deallocated apart).
 */
export const RESET_SQL = 'RESET ALL; RESET ROLE; CLOSE ALL; UNLISTEN *; SELECT pg_catalog.pg_advisory_unlock_all(); DISCARD TEMP; DISCARD SEQUENCES;';

/** Startup parameters the gateway handles itself rather than as settings. */
const NOT_SETTINGS = new Set(['user', 'database', 'options', 'replication']);
const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$/;

const quoteLiteral = (value: string): string => `'${value.replace(/'/g, "''")}'`;
const quoteName = (name: string): string => name.split('.').map((part) => `"${part.replace(/"/g, '""')}"`).join('.');

/** `SET name = value` for one setting, names and values quoted. */
export function setStatement(name: string, value: string): string {
  return `SET ${quoteName(name)} = ${quoteLiteral(value)};`;
}

// The statements tracked when they are a client's whole simple query outside a transaction.
const SET_VALUE = /^\s*set\s+(?:session\s+)?("(?:[^"]|"")+"|[a-z_][a-z0-9_$.]*)\s*(?:=|\s+to\s+)\s*([^;]+?)\s*;?\s*$/is;
const SET_ROLE = /^\s*set\s+(?:session\s+)?role\s+([^;]+?)\s*;?\s*$/is;
const SET_TIME_ZONE = /^\s*set\s+(?:session\s+)?time\s+zone\s+([^;]+?)\s*;?\s*$/is;
const RESET = /^\s*reset\s+("(?:[^"]|"")+"|all|role|[a-z_][a-z0-9_$.]*)\s*;?\s*$/is;

/** What a tracked statement does to the client's settings: the setting it sets (with the statement), or resets. */
export type TrackedChange = { set: string; statement: string } | { reset: string };

/** The change a client's simple query makes, when it is one the pooled endpoint keeps per client; null otherwise. */
export function trackedChange(sql: string): TrackedChange | null {
  if (sql.length > 10_000 || sql.includes('\0')) return null;
  const role = SET_ROLE.exec(sql);
  if (role) return { set: 'role', statement: sql.trim().replace(/;?$/, ';') };
  const zone = SET_TIME_ZONE.exec(sql);
  if (zone) return { set: 'timezone', statement: sql.trim().replace(/;?$/, ';') };
  const value = SET_VALUE.exec(sql);
  if (value && !/^local$/i.test(value[1])) return { set: settingKey(value[1]), statement: sql.trim().replace(/;?$/, ';') };
  const reset = RESET.exec(sql);
  if (reset) return { reset: settingKey(reset[1]) };
  return null;
}

function settingKey(name: string): string {
  return name.startsWith('"') ? name.slice(1, -1).replace(/""/g, '"') : name.toLowerCase();
}

/**
 * SQL that may leave state on a server session past its transaction (beyond the SETs the gateway
 * tracks): a SET or RESET as a statement (at the start, after a semicolon, a quote or a dollar quote,
 * or after BEGIN, THEN, ELSE or LOOP in a block: not UPDATE's SET), set_config, advisory locks,
 * LISTEN, cursors, PREPARE, temporary objects, DISCARD, DEALLOCATE, LOAD. A server connection that
 * ran any is reset in full before another client has it; one that ran none only has its settings
 * brought to the next client's. What functions do inside is not seen (README "Pooled endpoint").
 */
const SESSION_CHANGING = /(?:^|[;$'(]|\b(?:begin|then|else|loop|do))\s*(?:set|reset)\b|set_config|advisory|\blisten\b|\bdeclare\b|\bprepare\b|\btemp(?:orary)?\b|\bdiscard\b|\bdeallocate\b|\bload\b/i;

/** Whether SQL a client sends may change its server session beyond the transaction. */
export function changesSession(sql: string): boolean {
  return SESSION_CHANGING.test(sql);
}

/** What a server connection carries of its clients (server-pool.ts's ServerConnection). */
export interface HandOverTarget {
  owner: object | null;
  applied: ReadonlyMap<string, string>;
  dirty: boolean;
  sqlPrepared: boolean;
  readonly prepared: Map<string, true>;
}

/**
 * The simple query that makes `connection` this client's, or null when it already is: in full (the
 * reset, then every setting) after SQL that may have changed the session, or `full`; otherwise only
 * the settings that differ from those it carries.
 */
export function handOver(connection: HandOverTarget, state: PooledClientState, full = false): string | null {
  if (connection.owner === state && !full) return null;
  const settings = state.settings();
  let sql: string;
  if (full || connection.dirty || connection.sqlPrepared) {
    sql = [connection.sqlPrepared ? 'DEALLOCATE ALL;' : '', RESET_SQL, ...settings.values()].join(' ');
    if (connection.sqlPrepared) connection.prepared.clear();
  } else {
    const parts: string[] = [];
    for (const name of connection.applied.keys()) if (!settings.has(name)) parts.push(name === 'role' ? 'RESET ROLE;' : `RESET ${quoteName(name)};`);
    for (const [name, statement] of settings) if (connection.applied.get(name) !== statement) parts.push(statement);
    sql = parts.join(' ');
  }
  connection.owner = state;
  connection.applied = settings;
  connection.dirty = false;
  connection.sqlPrepared = false;
  return sql === '' ? null : sql;
}

const NO_SETTINGS: ReadonlyMap<string, string> = new Map();

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
 * One pooled client's session state. Its identity is what a server connection's `owner` compares.
 * Its maps are made when a first setting comes: most clients set nothing, and an idle one keeps this.
 */
export class PooledClientState {
  /** SETs from the startup packet (its parameters and `-c` options) and the tenant: the session's defaults, by setting. */
  private defaults: ReadonlyMap<string, string> | null = null;
  /** Tracked SETs since, by setting name, in the order they came. */
  private tracked: Map<string, string> | null = null;
  /** settings() with tracked SETs, as last made: the same map until another one comes (a hand-over happens once a transaction). */
  private made: ReadonlyMap<string, string> | null = null;

  constructor(login: Pick<LoginRequest, 'parameters' | 'options' | 'tenantSetting'>, tenantId: string | null) {
    const defaults = new Map<string, string>();
    for (const [name, value] of login.parameters) {
      if (NOT_SETTINGS.has(name) || name.startsWith('_pq_.') || isTenantParameter(name) || !SETTING_NAME.test(name)) continue;
      defaults.set(name.toLowerCase(), setStatement(name, value));
    }
    for (const [name, value] of optionSettings(login.options)) defaults.set(name.toLowerCase(), setStatement(name, value));
    if (tenantId !== null) {
      const setting = login.tenantSetting ?? TENANT_CONTEXT_SETTING;
      defaults.set(setting.toLowerCase(), setStatement(setting, tenantId));
    }
    if (defaults.size > 0) this.defaults = sharedDefaults(defaults);
  }

  /** Every setting the client's session has now, by name (lower case), with the statement that sets it. */
  settings(): ReadonlyMap<string, string> {
    // Most clients set nothing after login: their startup settings are the (shared) map itself.
    if (this.tracked === null || this.tracked.size === 0) return this.defaults ?? NO_SETTINGS;
    if (this.made) return this.made;
    const settings = new Map(this.defaults);
    for (const [name, statement] of this.tracked ?? []) {
      settings.delete(name);
      settings.set(name, statement);
    }
    this.made = settings;
    return settings;
  }

  /** Applies a tracked statement the server ran without an error. */
  apply(change: TrackedChange): void {
    this.made = null;
    if ('set' in change) {
      this.tracked ??= new Map();
      this.tracked.delete(change.set);
      this.tracked.set(change.set, change.statement);
    } else if (change.reset === 'all') {
      this.tracked = null;
    } else {
      this.tracked?.delete(change.reset);
    }
  }
}

/** `-c name=value` and `--name=value` of a client's options; other options are not settings and are ignored. */
export function optionSettings(options: readonly string[]): [string, string][] {
  const settings: [string, string][] = [];
  for (let i = 0; i < options.length; i++) {
    let word = options[i];
    if (word === '-c' && i + 1 < options.length) word = options[++i];
    else if (word.startsWith('-c')) word = word.slice(2);
    else if (word.startsWith('--')) word = word.slice(2);
    else continue;
    const at = word.indexOf('=');
    if (at <= 0) continue;
    const name = word.slice(0, at).replace(/-/g, '_');
    if (SETTING_NAME.test(name)) settings.push([name, word.slice(at + 1)]);
  }
  return settings;
}

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
 * One pooled client's session state: every setting it holds, by name (lower case), with its value as
 * PostgreSQL would take it from `set_config` (so `search_path=a,b` is two schemas). Its identity is
 * what a server connection's owner compares. Most clients set nothing after login: their startup
 * settings are one shared map.
 */
export class PooledClientState {
  private values: ReadonlyMap<string, string>;

  constructor(login: Pick<LoginRequest, 'parameters' | 'options' | 'tenantSetting'>, tenantId: string | null) {
    const defaults = new Map<string, string>();
    for (const [name, value] of login.parameters) {
      if (NOT_SETTINGS.has(name) || name.startsWith('_pq_.') || isTenantParameter(name) || !isSettingName(name)) continue;
      defaults.set(name.toLowerCase(), value);
    }
    for (const [name, value] of startupSettings(login.options)) if (isSettingName(name)) defaults.set(name.toLowerCase(), value);
    if (tenantId !== null) defaults.set((login.tenantSetting ?? TENANT_CONTEXT_SETTING).toLowerCase(), tenantId);
    this.values = defaults.size > 0 ? sharedDefaults(defaults) : NO_SETTINGS;
  }

  /** Every setting the client's session holds now, by name, in the order they are applied. */
  settings(): ReadonlyMap<string, string> {
    return this.values;
  }

  /** What the server reported of the client's session after a transaction that set or reset something. */
  reported(settings: ReadonlyMap<string, string>): void {
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

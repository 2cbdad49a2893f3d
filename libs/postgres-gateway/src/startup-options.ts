// The `options` startup parameter: command-line switches for the backend, split on whitespace with
// backslash escaping a character (PostgreSQL's pg_split_opts). The gateway takes the tenant out of
// it and passes everything else on unchanged.

import { isUuid, TENANT_CONTEXT_ALIAS, TENANT_CONTEXT_SETTING } from '@platform/domain';

/** The setting the data plane reads, and the name existing clients of this API family send for it. */
const TENANT_SETTING_ALIASES = new Set([TENANT_CONTEXT_SETTING, TENANT_CONTEXT_ALIAS]);

export function splitOptions(options: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < options.length; i++) {
    const char = options[i];
    if (char === '\\' && i + 1 < options.length) {
      word += options[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

export function joinOptions(words: readonly string[]): string {
  return words.map((word) => word.replace(/[\\\s]/g, (char) => `\\${char}`)).join(' ');
}

/** A setting from `-c name=value`, `-cname=value` or `--name=value`, else null. */
function settingOf(words: readonly string[], index: number): { name: string; value: string; consumed: number } | null {
  const word = words[index];
  let assignment: string | undefined;
  let consumed = 1;
  if (word === '-c') {
    assignment = words[index + 1];
    consumed = 2;
  } else if (word.startsWith('-c')) {
    assignment = word.slice(2);
  } else if (word.startsWith('--')) {
    assignment = word.slice(2);
  }
  if (assignment === undefined) return null;
  const equals = assignment.indexOf('=');
  if (equals < 0) return null;
  return { name: assignment.slice(0, equals).toLowerCase().replace(/-/g, '_'), value: assignment.slice(equals + 1), consumed };
}

/**
 * The tenant a login names, the name of the setting that named it (`setting`, lowercase, with the
 * tenant only), and the options without it; or the value that is not a tenant id.
 */
export type TenantOption = { tenantId: string | null; setting?: string; rest: string[] } | { invalid: { name: string; value: string } };

/** A startup parameter that sets the tenant: PostgreSQL takes any setting's name as a parameter too. */
export function isTenantParameter(name: string): boolean {
  return TENANT_SETTING_ALIASES.has(name.toLowerCase());
}

/**
 * The tenant of a whole startup packet: from `-c` in its options, or from a parameter named after
 * the setting, which PostgreSQL applies after the options (so it wins); and the options without
 * it. The gateway passes neither on, so every way of naming a tenant is checked the same.
 */
export function takeTenant(parameters: ReadonlyMap<string, string>): TenantOption {
  const taken = takeTenantOption(parameters.get('options'));
  if ('invalid' in taken) return taken;
  let named: Named = taken.tenantId === null ? null : { tenantId: taken.tenantId, setting: taken.setting! };
  for (const [name, value] of parameters) {
    if (!isTenantParameter(name)) continue;
    if (value !== '' && !isUuid(value)) return { invalid: { name: name.toLowerCase(), value } };
    named = value === '' ? null : { tenantId: value.toLowerCase(), setting: name.toLowerCase() };
  }
  return { ...(named ?? { tenantId: null }), rest: taken.rest };
}

/** The tenant named so far, and by which setting. */
type Named = { tenantId: string; setting: string } | null;

/**
 * Takes `platform.tenant_id` (or its alias `nile.tenant_id`) out of the options; the last one given
 * wins, as PostgreSQL's own settings do. An empty value means no tenant. A value that is not a UUID
 * is reported rather than passed on.
 */
export function takeTenantOption(options: string | undefined): TenantOption {
  const words = splitOptions(options ?? '');
  const rest: string[] = [];
  let named: Named = null;
  for (let i = 0; i < words.length; ) {
    const setting = settingOf(words, i);
    if (setting && TENANT_SETTING_ALIASES.has(setting.name)) {
      if (setting.value !== '' && !isUuid(setting.value)) return { invalid: { name: setting.name, value: setting.value } };
      named = setting.value === '' ? null : { tenantId: setting.value.toLowerCase(), setting: setting.name };
      i += setting.consumed;
    } else {
      rest.push(words[i]);
      i += 1;
    }
  }
  return { ...(named ?? { tenantId: null }), rest };
}

/**
 * The settings a client's options words make, as PostgreSQL's backend takes them (`-c name=value`,
 * `-cname=value`, `--name=value`; a dash in a name is an underscore; the words already split with
 * backslash escapes, so `-c search_path=a,\ b` is one value): the pooled endpoint gives each to the
 * server with `set_config`, which reads a value as the option would. Other switches are not settings.
 */
export function startupSettings(words: readonly string[]): [string, string][] {
  const settings: [string, string][] = [];
  for (let i = 0; i < words.length; ) {
    const setting = settingOf(words, i);
    if (setting) settings.push([setting.name, setting.value]);
    i += setting?.consumed ?? 1;
  }
  return settings;
}

import { readFileSync } from 'node:fs';
/** Thrown at start-up when the environment is wrong; the message names the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

function raw(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === '' ? undefined : value;
}

export function readString(env: Env, name: string, fallback: string): string {
  return raw(env, name) ?? fallback;
}

export function readOptionalString(env: Env, name: string): string | undefined {
  return raw(env, name);
}

export function readInteger(env: Env, name: string, fallback: number, range: { min: number; max: number }): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new ConfigError(name, `expected a whole number, got '${value}'`);
  const parsed = Number(value);
  if (parsed < range.min || parsed > range.max) {
    throw new ConfigError(name, `expected a number from ${range.min} to ${range.max}, got ${parsed}`);
  }
  return parsed;
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * A length of time in whole seconds: a number of seconds (`3600`), or a number with one unit,
 * `s`, `m`, `h` or `d` (`90s`, `15m`, `12h`, `7d`); within `range` (seconds).
 */
export function readDurationSeconds(env: Env, name: string, fallback: number, range: { min: number; max: number }): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const match = /^(\d{1,9})([smhd]?)$/.exec(value);
  if (!match) throw new ConfigError(name, `expected seconds, or a whole number with a unit s, m, h or d (e.g. 7d), got '${value}'`);
  const seconds = Number(match[1]) * DURATION_UNITS[match[2] || 's'];
  if (seconds < range.min || seconds > range.max) {
    throw new ConfigError(name, `expected from ${range.min} to ${range.max} seconds, got ${seconds}`);
  }
  return seconds;
}

export function readPort(env: Env, name: string, fallback: number): number {
  return readInteger(env, name, fallback, { min: 0, max: 65535 });
}

export function readUrl(env: Env, name: string, fallback: string | undefined, protocols: readonly string[]): string {
  const value = raw(env, name) ?? fallback;
  if (value === undefined) throw new ConfigError(name, 'is required');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${url.protocol}`);
  }
  return value.replace(/\/+$/, '');
}

export function readEnum<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const value = raw(env, name) ?? fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got '${value}'`);
  }
  return value as T;
}

export function readList<T extends string>(env: Env, name: string, fallback: readonly T[], allowed: readonly T[]): T[] {
  const value = raw(env, name);
  if (value === undefined) return [...fallback];
  const items = value.split(',').map((item) => item.trim()).filter(Boolean);
  if (items.length === 0) throw new ConfigError(name, 'must name at least one value');
  for (const item of items) {
    if (!(allowed as readonly string[]).includes(item)) {
      throw new ConfigError(name, `unknown value '${item}'; expected some of ${allowed.join(', ')}`);
    }
  }
  return [...new Set(items)] as T[];
}

/** A server's certificate (chain) and private key, read from PEM files at start-up. */
export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
  certPath: string;
}

function readPem(env: Env, name: string): { path: string; pem: Buffer } | null {
  const path = readOptionalString(env, name);
  if (path === undefined) return null;
  let pem: Buffer;
  try {
    pem = readFileSync(path);
  } catch (error) {
    throw new ConfigError(name, `cannot read ${path}: ${(error as Error).message}`);
  }
  if (!pem.toString('utf8').includes('-----BEGIN ')) throw new ConfigError(name, `${path} is not a PEM file`);
  return { path, pem };
}

/** A certificate and key named by two variables that go together; null when neither is set. */
export function readTlsPair(env: Env, certName: string, keyName: string): TlsFiles | null {
  const cert = readPem(env, certName);
  const key = readPem(env, keyName);
  if ((cert === null) !== (key === null)) throw new ConfigError(cert ? keyName : certName, `${certName} and ${keyName} go together`);
  return cert && key ? { cert: cert.pem, key: key.pem, certPath: cert.path } : null;
}

// How `npm start` shows the apps' logs. The apps write pino's JSON, one object a line: right for a
// log collector, hard to read in a terminal, where a few dozen long lines also push the banner out
// of sight. On a terminal each line is rewritten to one short line; anywhere else it passes as it is.

export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Record<number, string> = { 40: '\u001b[33m', 50: '\u001b[31m', 60: '\u001b[31m' };
const RESET = '\u001b[0m';
/** Said by every line, or by the time and level already shown. */
const LEFT_OUT = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'err', 'requestId']);

function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

function clock(time: unknown): string {
  const date = typeof time === 'number' ? new Date(time) : new Date();
  return date.toISOString().slice(11, 23);
}

/**
 * One pino line as `12:00:01.234 INFO  api  request GET /workspaces 200 4.1ms key=value`; an error's
 * stack follows, indented. A line that is not pino's JSON is answered unchanged.
 */
export function prettyLogLine(line: string, options: { colour?: boolean } = {}): string {
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { level?: unknown }).level !== 'number') return line;
    entry = parsed as Record<string, unknown>;
  } catch {
    return line;
  }
  const level = entry.level as number;
  const label = LEVELS[level] ?? String(level);
  const parts = [clock(entry.time), options.colour && COLOURS[level] ? `${COLOURS[level]}${label}${RESET}` : label];
  if (typeof entry.name === 'string') parts.push(entry.name.padEnd(7));
  parts.push(String(entry.msg ?? ''));
  const fields = Object.entries(entry).filter(([key]) => !LEFT_OUT.has(key));
  const request = entry.msg === 'request' && typeof entry.method === 'string';
  if (request) {
    parts.push(`${entry.method as string} ${shown(entry.path)} ${shown(entry.status)}${typeof entry.ms === 'number' ? ` ${entry.ms}ms` : ''}`);
  }
  for (const [key, value] of fields) {
    if (request && ['method', 'path', 'status', 'ms'].includes(key)) continue;
    parts.push(`${key}=${shown(value)}`);
  }
  const err = entry.err as { message?: unknown; stack?: unknown } | undefined;
  let text = parts.join(' ');
  if (err && typeof err === 'object') {
    text += ` err=${shown(err.message)}`;
    if (typeof err.stack === 'string') text += `\n${err.stack.replace(/^/gm, '    ')}`;
  }
  return text;
}

/** A Cookie header's cookies by name, values as sent; the first of a repeated name wins (browsers send the most specific path first). */
export function parseCookies(header: string): Map<string, string> {
  const jar = new Map<string, string>();
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at <= 0) continue;
    const name = part.slice(0, at).trim();
    if (!jar.has(name)) jar.set(name, part.slice(at + 1).trim());
  }
  return jar;
}

/** A cookie's value as sent; undefined when it is absent or empty. */
export function cookieValue(header: string, name: string): string | undefined {
  return parseCookies(header).get(name) || undefined;
}

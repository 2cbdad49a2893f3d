/** Tokens, errors about them and pages with forms must never be cached (RFC 6749 section 5.1). */
export const NO_STORE: Readonly<Record<string, string>> = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

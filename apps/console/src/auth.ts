// Signing a developer in through the token service: the authorization code flow with PKCE S256
// as the first-party public client the API registered for this page (RFC 6749, 7636, 9700). The
// code is redeemed at the API's own POST /oauth2/token (same origin: no CORS). Tokens live in
// sessionStorage: they end with the tab, and the page's CSP lets no other script read them.

/** What the API wrote into the page: where to sign in, as which client, and where to come back. */
export interface Settings {
  issuer: string;
  authorizeUrl: string;
  clientId: string;
  redirectUri: string;
  /** The API's root, relative to the page: every call of the console goes there. */
  apiRoot: string;
}

interface Session {
  accessToken: string;
  refreshToken?: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

interface Pending {
  verifier: string;
  state: string;
}

const SESSION = 'console.session';
const PENDING = 'console.pending';
const SCOPE = 'api:read api:write';

export function readSettings(root: HTMLElement): Settings {
  const data = root.dataset;
  return {
    issuer: data.issuer ?? '',
    authorizeUrl: data.authorize ?? '',
    clientId: data.clientId ?? '',
    redirectUri: data.redirectUri ?? '',
    // From the address the server gave (its PUBLIC_BASE_URL/console), not the one typed: /console/ would make it /console/.
    apiRoot: new URL('./', data.redirectUri ?? location.href).href,
  };
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

function randomText(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** Sends the browser to the token service's sign-in page. */
export async function startSignIn(settings: Settings): Promise<void> {
  if (!crypto.subtle) throw new Error('Signing in needs a secure page: open the console over https or at a loopback address (127.0.0.1).');
  const pending: Pending = { verifier: randomText(), state: randomText() };
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(pending.verifier))));
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(settings.authorizeUrl);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: settings.clientId,
    redirect_uri: settings.redirectUri,
    scope: SCOPE,
    state: pending.state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.href);
}

async function tokenRequest(settings: Settings, form: Record<string, string>): Promise<Session> {
  const response = await fetch(new URL('oauth2/token', settings.apiRoot), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: settings.clientId, ...form }),
  });
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) throw new Error(`The token service refused: ${String(body.error_description ?? body.error ?? response.status)}`);
  const session: Session = {
    accessToken: String(body.access_token),
    refreshToken: typeof body.refresh_token === 'string' ? body.refresh_token : undefined,
    expiresAt: Date.now() + Number(body.expires_in ?? 0) * 1000,
  };
  sessionStorage.setItem(SESSION, JSON.stringify(session));
  return session;
}

/**
 * Finishes a sign-in when the page is the redirect target (a `code` or an `error` in its query),
 * then takes them out of the address bar. Answers whether the page was such a return.
 */
export async function finishSignIn(settings: Settings): Promise<boolean> {
  const query = new URLSearchParams(location.search);
  if (!query.has('code') && !query.has('error')) return false;
  history.replaceState(null, '', location.pathname);
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as Pending | null;
  sessionStorage.removeItem(PENDING);
  if (!pending || query.get('state') !== pending.state) throw new Error('This sign-in was not started here (its state does not match): sign in again.');
  // The token service always names itself (RFC 9207): an answer without it is not its answer.
  if (query.get('iss') !== settings.issuer) throw new Error('The answer came from another token service: sign in again.');
  if (query.has('error')) throw new Error(`Sign-in ended: ${query.get('error_description') ?? query.get('error')}`);
  await tokenRequest(settings, { grant_type: 'authorization_code', code: query.get('code') ?? '', redirect_uri: settings.redirectUri, code_verifier: pending.verifier });
  return true;
}

export function signedIn(): boolean {
  return sessionStorage.getItem(SESSION) !== null;
}

/** Forgets the tab's tokens (the token service refused them, or they cannot be refreshed). */
export function forgetSession(): void {
  sessionStorage.removeItem(SESSION);
}

/** Forgets the tokens, and revokes their family at the token service (the refresh token would otherwise stay good for its days). */
export async function signOut(settings: Settings): Promise<void> {
  const session = JSON.parse(sessionStorage.getItem(SESSION) ?? 'null') as Session | null;
  forgetSession();
  const token = session?.refreshToken ?? session?.accessToken;
  if (!token) return;
  await fetch(new URL('oauth2/revoke', settings.apiRoot), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: settings.clientId, token }),
  }).catch(() => undefined);
}

/** The refresh under way: panels asking at once share it (a refresh token is single use; a second use revokes the family). */
let refreshing: Promise<string | null> | undefined;

/** The access token, refreshed first when it ends within half a minute; null when signed out. */
export async function accessToken(settings: Settings): Promise<string | null> {
  const session = JSON.parse(sessionStorage.getItem(SESSION) ?? 'null') as Session | null;
  if (!session) return null;
  if (session.expiresAt - Date.now() > 30_000) return session.accessToken;
  refreshing ??= refresh(settings, session).finally(() => (refreshing = undefined));
  return refreshing;
}

async function refresh(settings: Settings, session: Session): Promise<string | null> {
  if (!session.refreshToken) {
    forgetSession();
    return null;
  }
  try {
    return (await tokenRequest(settings, { grant_type: 'refresh_token', refresh_token: session.refreshToken })).accessToken;
  } catch {
    forgetSession();
    return null;
  }
}

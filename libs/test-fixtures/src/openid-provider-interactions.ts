// The test OpenID Provider's user-facing side: the login page at the provider's interaction URL,
// automatic consent, and the error page. Kept free of anything external (no fonts, no scripts) so
// that a headless browser behind no network renders it as well as a plain HTTP client does.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Context, Middleware } from 'koa';

/** The members of oidc-provider's Provider (a Koa application) that the harness uses; the package ships no typings. */
export interface OidcProviderApp {
  proxy: boolean;
  use(middleware: Middleware): unknown;
  callback(): RequestListener;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionResult(req: IncomingMessage, res: ServerResponse, result: object, options: { mergeWithLastSubmission: boolean }): Promise<string>;
  on(event: 'server_error', listener: (ctx: unknown, error: Error) => void): unknown;
}

interface InteractionDetails {
  uid: string;
  prompt: { name: string };
}

interface Grant {
  accountId: string;
  clientId: string;
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  save(): Promise<string>;
}

/** The parts of oidc-provider's per-request `ctx.oidc` that granting consent reads. */
interface OidcRequestContext {
  oidc: {
    client: { clientId: string };
    session: { accountId?: string; grantIdFor(clientId: string): string | undefined };
    result?: { consent?: { grantId?: string } };
    requestParamOIDCScopes: Set<string>;
    requestParamClaims: Set<string>;
    provider: { Grant: { new (properties: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> } };
  };
}

/** Finds the account a login names, by sub or by email; the login page's only check. */
export type AccountLookup = (login: string) => { sub: string } | undefined;

const interactionPath = /^\/interaction\/([\w-]+)$/;

/**
 * Serves the login page at `/interaction/:uid` (the provider's default interaction URL). A known
 * login finishes the login prompt and sends the browser back to the provider with 303; consent
 * never needs a page because {@link grantRequestedScopes} grants whatever was asked.
 */
export function serveLoginPage(provider: OidcProviderApp, findByLogin: AccountLookup): Middleware {
  return async function loginPage(ctx, next) {
    const uid = interactionPath.exec(ctx.path)?.[1];
    if (!uid) return next();
    const interaction = await interactionFor(provider, ctx, uid);
    if (!interaction) return;
    if (interaction.prompt.name !== 'login') {
      renderErrorPage(ctx, 500, { error: 'server_error', error_description: `unexpected prompt ${interaction.prompt.name}` });
    } else if (ctx.method === 'GET') {
      renderLoginForm(ctx);
    } else if (ctx.method === 'POST') {
      await submitLogin(provider, ctx, findByLogin);
    } else {
      ctx.status = 405;
    }
  };
}

/** The interaction the cookies name, or undefined once an error page has been written (expired, or another uid). */
async function interactionFor(provider: OidcProviderApp, ctx: Context, uid: string): Promise<InteractionDetails | undefined> {
  try {
    const interaction = await provider.interactionDetails(ctx.req, ctx.res);
    if (interaction.uid === uid) return interaction;
    renderErrorPage(ctx, 400, { error: 'invalid_request', error_description: 'interaction mismatch' });
  } catch (error) {
    const { status, message, error_description } = error as { status?: number; message: string; error_description?: string };
    if (!status || status >= 500) throw error;
    renderErrorPage(ctx, status, { error: message, error_description });
  }
  return undefined;
}

async function submitLogin(provider: OidcProviderApp, ctx: Context, findByLogin: AccountLookup): Promise<void> {
  const login = (await readForm(ctx.req)).get('login')?.trim() ?? '';
  const account = findByLogin(login);
  if (!account) {
    renderLoginForm(ctx, `No account matches "${login}".`);
    return;
  }
  const returnTo = await provider.interactionResult(ctx.req, ctx.res, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
  ctx.redirect(returnTo);
  ctx.status = 303;
}

/** Reads an application/x-www-form-urlencoded body; nothing ahead of this route parses bodies. */
async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The form posts back to the page's own URL, so it needs no hidden fields. */
function renderLoginForm(ctx: Context, error?: string): void {
  ctx.type = 'html';
  ctx.body = page(
    'Sign in',
    `<h1>Sign in to the test OpenID Provider</h1>
${error ? `<p id="login-error" role="alert">${escapeHtml(error)}</p>\n` : ''}<form method="post">
<label>Login (sub or email) <input name="login" autocomplete="username" autofocus></label>
<button type="submit">Sign in</button>
</form>`,
  );
}

/** Writes the error page; used for the provider's own errors too (its `renderError`). */
export function renderErrorPage(ctx: Context, status: number, out: { error: string; error_description?: string }): void {
  ctx.status = status;
  ctx.type = 'html';
  ctx.body = page(
    'Sign-in failed',
    `<h1>Sign-in failed</h1>
<p id="error">${escapeHtml(out.error)}</p>
<p id="error_description">${escapeHtml(out.error_description ?? '')}</p>`,
  );
}

/** oidc-provider's `renderError` hook: it has already set the status. */
export async function renderProviderError(ctx: Context, out: { error: string; error_description?: string }): Promise<void> {
  renderErrorPage(ctx, ctx.status, out);
}

/**
 * oidc-provider's `loadExistingGrant` hook, which stands in for a consent page: the signed-in
 * account's grant for this client (a new one if none) gains the scopes and claims the request
 * asks for, so the consent prompt never finds anything missing.
 */
export async function grantRequestedScopes(ctx: OidcRequestContext): Promise<Grant | undefined> {
  const { client, session, result, provider } = ctx.oidc;
  if (!session.accountId) return undefined;
  const grantId = result?.consent?.grantId ?? session.grantIdFor(client.clientId);
  const existing = grantId ? await provider.Grant.find(grantId) : undefined;
  const grant = existing ?? new provider.Grant({ accountId: session.accountId, clientId: client.clientId });
  grant.addOIDCScope([...ctx.oidc.requestParamOIDCScopes].join(' '));
  grant.addOIDCClaims([...ctx.oidc.requestParamClaims]);
  await grant.save();
  return grant;
}

/** The empty icon link keeps browsers from asking for /favicon.ico, which would show in `requests`. */
function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title><link rel="icon" href="data:,"></head>
<body>
${body}
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

import { checkAuthorizationRequest, type AuthorizationCheck } from '@platform/domain';
import { csrfToken } from './csrf.js';
import { htmlAnswer, redirectAnswer } from './html-answers.js';
import { errorPage, signInPage } from './pages.js';
import type { TokenServiceScope } from './token-service-scope.js';

/**
 * A request that fails its check: shown here (400) when its client or redirect URI cannot be
 * trusted, else sent back to the client (303) with the error.
 */
export function refusedRequestAnswer(checked: Exclude<AuthorizationCheck, { ok: true }>) {
  return 'shownHere' in checked ? htmlAnswer(400, errorPage(checked.shownHere)) : redirectAnswer(checked.redirectTo);
}

/** The sign-in page of an authorization request (its form posts back to the authorization endpoint), once the request checks out. */
export async function authorizationPage(
  scope: TokenServiceScope,
  params: Record<string, string | undefined>,
  cookieHeader: string,
  extra: { status?: number; email?: string; error?: string; notice?: string } = {},
) {
  const checked = await checkAuthorizationRequest(scope, params);
  if (!checked.ok) return refusedRequestAnswer(checked);
  const csrf = csrfToken(cookieHeader, scope.settings.issuer);
  return htmlAnswer(
    extra.status ?? 200,
    signInPage({ clientName: checked.request.client.name, params, scopes: checked.request.scopes, csrf: csrf.value, ...extra }),
    { formTarget: checked.request.redirectUri, setCookie: csrf.setCookie },
  );
}

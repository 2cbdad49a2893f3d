// The token service's HTML: the sign-in page of the authorization endpoint and the developer
// sign-up page. Server-rendered, no script; every interpolated value goes through `escape`.

import { escapeHtml as escape, htmlDocument } from '@platform/http';

/** The authorization request's parameters, carried through the sign-in form unchanged. */
export const AUTHORIZATION_PARAMS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
] as const;

const STYLE = `
  body { font: 16px/1.5 system-ui, sans-serif; background: #f4f5f7; color: #1d2330; margin: 0; }
  main { max-width: 24rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 8px;
         box-shadow: 0 1px 3px rgba(0,0,0,.12); }
  h1 { font-size: 1.35rem; margin: 0 0 .25rem; }
  p.lead { color: #4a5263; margin: 0 0 1.5rem; }
  label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
  input[type=email], input[type=password], input[type=text] { width: 100%; box-sizing: border-box;
         padding: .55rem .65rem; border: 1px solid #c4c9d4; border-radius: 6px; font-size: 1rem; }
  button { margin-top: 1.5rem; width: 100%; padding: .65rem; border: 0; border-radius: 6px;
         background: #2857d6; color: #fff; font-size: 1rem; font-weight: 600; cursor: pointer; }
  .error { background: #fdecec; color: #8a1c1c; padding: .6rem .8rem; border-radius: 6px; }
  .notice { background: #e8f3ea; color: #1c5a2a; padding: .6rem .8rem; border-radius: 6px; }
  .scopes { color: #4a5263; font-size: .9rem; }
  .alt { margin-top: 1.25rem; font-size: .9rem; text-align: center; }`;

function page(title: string, content: string): string {
  return htmlDocument(title, `<main>\n${content}\n</main>`, STYLE);
}

const SCOPE_TEXT: Record<string, string> = {
  'api:read': 'read your workspaces, databases, tenants and users',
  'api:write': 'create, change and delete them',
};

export interface SignInPageInput {
  clientName: string;
  params: Record<string, string | undefined>;
  scopes: string[];
  csrf: string;
  email?: string;
  error?: string;
  notice?: string;
}

export function signInPage(input: SignInPageInput): string {
  const hidden = AUTHORIZATION_PARAMS.filter((name) => input.params[name] !== undefined)
    .map((name) => `<input type="hidden" name="${name}" value="${escape(input.params[name] ?? '')}">`)
    .join('\n');
  const query = new URLSearchParams();
  for (const name of AUTHORIZATION_PARAMS) if (input.params[name] !== undefined) query.set(name, input.params[name] ?? '');
  const scopes = input.scopes.map((scope) => `<li>${escape(SCOPE_TEXT[scope] ?? scope)}</li>`).join('');
  return page(
    'Sign in',
    `<h1>Sign in</h1>
<p class="lead"><strong>${escape(input.clientName)}</strong> asks to act for you on the platform.</p>
${input.error ? `<p class="error" role="alert">${escape(input.error)}</p>` : ''}
${input.notice ? `<p class="notice" role="status">${escape(input.notice)}</p>` : ''}
<form method="post" action="/oauth2/authorize">
${hidden}
<input type="hidden" name="csrf" value="${escape(input.csrf)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escape(input.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<p class="scopes">Signing in lets it:</p>
<ul class="scopes">${scopes}</ul>
<button type="submit">Sign in and allow</button>
</form>
<p class="alt">No account? <a href="/signup?${escape(query.toString())}">Create one</a></p>`,
  );
}

export function signUpPage(input: { csrf: string; returnQuery: string; email?: string; name?: string; error?: string }): string {
  return page(
    'Create a developer account',
    `<h1>Create a developer account</h1>
<p class="lead">Developers own workspaces, databases and OAuth clients.</p>
${input.error ? `<p class="error" role="alert">${escape(input.error)}</p>` : ''}
<form method="post" action="/signup">
<input type="hidden" name="csrf" value="${escape(input.csrf)}">
<input type="hidden" name="return" value="${escape(input.returnQuery)}">
<label for="name">Name</label>
<input id="name" name="name" type="text" autocomplete="name" value="${escape(input.name ?? '')}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escape(input.email ?? '')}">
<label for="password">Password (8 to 256 characters)</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="8">
<button type="submit">Create account</button>
</form>`,
  );
}

export function errorPage(message: string): string {
  return page('Cannot continue', `<h1>Cannot continue</h1>\n<p class="error" role="alert">${escape(message)}</p>\n<p>Go back to the application and start again.</p>`);
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escape(title)}</h1>\n<p class="notice" role="status">${escape(message)}</p>`);
}

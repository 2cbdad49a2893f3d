// The public API, as any client calls it: JSON over HTTP with the developer's bearer token.
import { accessToken, forgetSession, type Settings } from './auth';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let settings: Settings;
let onSignedOut: () => void = () => undefined;

export function configureApi(given: Settings, signedOut: () => void): void {
  settings = given;
  onSignedOut = signedOut;
}

/** Calls `path` (absolute from the API's root, e.g. `/workspaces`); answers the JSON body, or undefined for 204. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const token = await accessToken(settings);
  if (!token) {
    onSignedOut();
    throw new ApiError(401, 'signed_out', 'Signed out: sign in again.');
  }
  const response = await fetch(new URL(path.replace(/^\//, ''), settings.apiRoot), {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  const answer = (await response.json().catch(() => ({}))) as { errorCode?: string; message?: string };
  if (response.status === 401) {
    forgetSession();
    onSignedOut();
  }
  if (!response.ok) throw new ApiError(response.status, answer.errorCode ?? 'error', answer.message ?? `HTTP ${response.status}`);
  return answer as T;
}

/** A path from segments, each encoded. */
export function pathOf(...segments: string[]): string {
  return '/' + segments.map(encodeURIComponent).join('/');
}

import type { MikroORM } from '@mikro-orm/postgresql';

/**
 * Makes sure a first-party public client (no workspace, no secret) exists with `redirectUri` as its
 * only redirect URI, as a service that knows its own public address does at start (the web
 * console: its redirect URI is the API's PUBLIC_BASE_URL/console, known only from the settings).
 * The URI replaces those the client had: an address the platform no longer serves (a changed
 * PUBLIC_BASE_URL, an old domain) must not go on receiving a developer's authorization codes for
 * whoever holds it next. Replicas sharing a control plane share one PUBLIC_BASE_URL. A client
 * already holding exactly the URI is left untouched (no change notification at every start).
 * Answers whether anything was written.
 */
export async function ensureFirstPartyClient(orm: MikroORM, client: { id: string; name: string; redirectUri: string }): Promise<boolean> {
  const uris = JSON.stringify([client.redirectUri]);
  const rows = await orm.em.fork().execute<{ id: string }[]>(
    `insert into oauth_clients (id, workspace_id, name, type, secret_digest, redirect_uris, created)
     values (?, null, ?, 'public', null, ?::jsonb, now())
     on conflict (id) do update set redirect_uris = excluded.redirect_uris
       where oauth_clients.workspace_id is null and oauth_clients.redirect_uris <> excluded.redirect_uris
     returning id`,
    [client.id, client.name, uris],
  );
  return rows.length > 0;
}

import { invalidCursor, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, type Page, type PageRequest } from '@platform/domain';
import { respond, type Responded } from './route.js';
import { optional, queryInteger, text } from './schema.js';

/** The query fields of every paged list; spread them into the route's query record. */
export const pageQueryFields = {
  limit: optional(queryInteger({ min: 1, max: PAGE_SIZE_MAX, description: `Items per page, 1 to ${PAGE_SIZE_MAX}; ${PAGE_SIZE_DEFAULT} when omitted` })),
  cursor: optional(text({ min: 1, max: 200, description: 'Where the page starts: taken from the previous page’s Link rel="next", never made by hand' })),
};

/** What a paged route documents about its answer's headers. */
export const PAGE_LINK_HEADER = { Link: '`<...>; rel="next"`: the next page’s address, absent on the last page' };

const CURSOR = /^[A-Za-z0-9_-]{1,200}$/;

/** The page a request asks for; a cursor that does not decode is invalid_cursor (400). */
export function pageRequest(query: { limit?: number; cursor?: string }): PageRequest {
  const limit = query.limit ?? PAGE_SIZE_DEFAULT;
  if (query.cursor === undefined) return { limit, afterId: null };
  if (!CURSOR.test(query.cursor)) throw invalidCursor();
  const decoded = Buffer.from(query.cursor, 'base64url').toString('utf8');
  const byId = /^v1:([0-9a-f-]{36})$/.exec(decoded);
  if (byId) return { limit, afterId: byId[1] };
  // Lists paged by key carry the last item's creation time too; their ids are not all uuids.
  const byKey = /^v2:([0-9]{1,15}):([A-Za-z0-9_.:-]{1,100})$/.exec(decoded);
  if (byKey) return { limit, afterId: byKey[2], afterAt: Number(byKey[1]) };
  throw invalidCursor();
}

/**
 * A page as the answer: the items as the body (the array the SPEC shows) and, when there is more,
 * a Link header to the next page: this request's path and query with the new cursor.
 */
export function pagedAnswer<T>(page: Page<T>, present: (item: T) => unknown, request: { path: string; rawQuery: Record<string, string | string[] | undefined> }): Responded {
  const headers: Record<string, string> = {};
  if (page.nextAfterId !== null) {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(request.rawQuery)) {
      if (name === 'cursor' || value === undefined) continue;
      for (const each of Array.isArray(value) ? value : [value]) query.append(name, each);
    }
    const cursor = page.nextAfterAt === undefined ? `v1:${page.nextAfterId}` : `v2:${page.nextAfterAt}:${page.nextAfterId}`;
    query.set('cursor', Buffer.from(cursor, 'utf8').toString('base64url'));
    headers.Link = `<${request.path}?${query.toString()}>; rel="next"`;
  }
  return respond({ status: 200, body: page.items.map(present), headers });
}

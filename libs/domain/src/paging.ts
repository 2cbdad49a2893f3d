import { ValidationError } from './errors.js';

/**
 * Lists come in pages: at most `limit` items after a cursor, oldest first. Clients that do not
 * page get the first PAGE_SIZE_DEFAULT items, which is every item of an ordinary list.
 */
export const PAGE_SIZE_DEFAULT = 1000;
export const PAGE_SIZE_MAX = 1000;

/**
 * Where a page starts: after the item with this id. A list kept in the database finds that item's
 * exact position (created, id) there, so rows added meanwhile never shift a page; the cursor
 * stays valid after the item is deleted (rows are only marked deleted).
 */
export interface PageRequest {
  limit: number;
  afterId: string | null;
  /** For lists paged in memory by (created, id): the cursor item's creation time, in ms. */
  afterAt?: number;
}

export interface Page<T> {
  items: T[];
  /** The id to continue after, or null on the last page. */
  nextAfterId: string | null;
  /** With nextAfterId, for lists paged by key (pageByKey): the last item's creation time, in ms. */
  nextAfterAt?: number;
}

export function firstPage(limit = PAGE_SIZE_DEFAULT): PageRequest {
  return { limit, afterId: null };
}

export function invalidCursor(): ValidationError {
  return new ValidationError('invalid_cursor', 'The cursor is not one this list gave: start from the first page');
}

/** A page of rows read with one extra: the extra says there is a next page, and is not returned. */
export function pageOf<T extends { id: string }>(rows: T[], request: PageRequest): Page<T> {
  const items = rows.slice(0, request.limit);
  return { items, nextAfterId: rows.length > request.limit ? items[items.length - 1].id : null };
}

/**
 * A page of rows read by key (created, id) with one extra, as pageOf: the cursor carries the last
 * item's key, so the page after it is found even when that item has gone since.
 */
export function keyedPageOf<T extends { id: string; created: Date }>(rows: T[], request: PageRequest): Page<T> {
  const page = pageOf(rows, request);
  const last = page.items.at(-1);
  return page.nextAfterId !== null && last ? { ...page, nextAfterAt: last.created.getTime() } : page;
}

/** An item's place in a list paged by key: when it was made (ms), then its id. */
export interface PageKey {
  at: number;
  id: string;
}

/** The paging key of anything with an id and a creation time. */
export function byCreated(item: { id: string; created: Date }): PageKey {
  return { at: item.created.getTime(), id: item.id };
}

function compareKeys(a: PageKey, b: PageKey): number {
  return a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * A page of a list held in memory, ordered by (created, id) here: the cursor carries the last
 * item's key, so a page continues at the right place even when that item has gone since, and rows
 * added meanwhile never repeat or skip one that was there throughout. For the control plane's
 * lists, which are read whole (one workspace's or one database's), and a user's own tenants.
 */
export function pageByKey<T>(all: readonly T[], request: PageRequest, keyOf: (item: T) => PageKey): Page<T> {
  const sorted = [...all].sort((a, b) => compareKeys(keyOf(a), keyOf(b)));
  let start = 0;
  if (request.afterId !== null) {
    if (request.afterAt === undefined) throw invalidCursor();
    const after = { at: request.afterAt, id: request.afterId };
    start = sorted.findIndex((item) => compareKeys(keyOf(item), after) > 0);
    if (start < 0) start = sorted.length;
  }
  const items = sorted.slice(start, start + request.limit);
  const more = sorted.length > start + request.limit;
  const last = items.length > 0 ? keyOf(items[items.length - 1]) : null;
  return { items, nextAfterId: more && last ? last.id : null, ...(more && last ? { nextAfterAt: last.at } : {}) };
}

/**
 * A page of items in (created, id) order starting after the item `request.afterId` names (400
 * invalid_cursor when none has it): what a keyset query answers, for lists held in memory (fakes
 * of the repositories that page in SQL).
 */
export function pageAfterId<T extends { id: string; created: Date }>(all: readonly T[], request: PageRequest): Page<T> {
  const sorted = [...all].sort((a, b) => compareKeys(byCreated(a), byCreated(b)));
  let start = 0;
  if (request.afterId !== null) {
    const at = sorted.findIndex((item) => item.id === request.afterId);
    if (at < 0) throw invalidCursor();
    start = at + 1;
  }
  return pageOf(sorted.slice(start, start + request.limit + 1), request);
}

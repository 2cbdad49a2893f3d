import { pageByKey, type PageKey } from '@platform/domain';
import { pageRequest, pagedAnswer } from '@platform/http';

/**
 * A page of a list the control plane gives whole (one workspace's or one database's), paged here by
 * (created, id) with PAGED's query fields and Link header.
 */
export function pagedList<T>(
  items: readonly T[],
  request: { query: { limit?: number; cursor?: string }; path: string; rawQuery: Record<string, string | string[] | undefined> },
  keyOf: (item: T) => PageKey,
  present: (item: T) => unknown,
) {
  return pagedAnswer(pageByKey(items, pageRequest(request.query), keyOf), present, request);
}

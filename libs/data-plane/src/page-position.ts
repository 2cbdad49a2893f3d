import { invalidCursor } from '@platform/domain';
import type { Queryable } from './queryable.js';

/**
 * Where a page continues: the exact (created, id) of the cursor's row, with `created` as
 * PostgreSQL's own text (microseconds, which a JavaScript Date would round away). Deleted rows keep
 * their place, so a cursor outlives its row; an id that was never there is invalid_cursor.
 */
export async function positionOf(pool: Queryable, table: 'public.tenants' | 'users.users', afterId: string | null): Promise<{ created: string; id: string } | null> {
  if (afterId === null) return null;
  const { rows } = await pool.query<{ created: string }>(`select created::text as created from ${table} where id = $1`, [afterId]);
  if (rows.length === 0) throw invalidCursor();
  return { created: rows[0].created, id: afterId };
}

import { ValidationError } from '@platform/domain';

/** No request body of ours nests deeper than a few levels; 32 leaves room and stops abuse. */
export const MAX_JSON_DEPTH = 32;

/**
 * Refuses a parsed JSON value nested deeper than `maxDepth` arrays and objects, walking it with a
 * stack of its own: validation (and anything else that recurses) never sees such a value, so a body
 * of 5,000 nested arrays is a 400, not a RangeError from the call stack.
 */
export function assertJsonDepth(value: unknown, maxDepth = MAX_JSON_DEPTH): void {
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > maxDepth) throw new ValidationError('validation_failed', `body: nested deeper than ${maxDepth} levels of arrays and objects`);
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === 'object') pending.push([child, depth + 1]);
    }
  }
}

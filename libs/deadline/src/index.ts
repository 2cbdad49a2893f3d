export { beforeDeadline, DEADLINE_EXCEEDED, DeadlineExceededError, remainingMs, withDeadline, withoutDeadline } from './deadline.js';
export { cutQueriesAtDeadline, type DeadlineClient } from './query-deadline.js';

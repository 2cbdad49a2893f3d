export { beforeDeadline, DEADLINE_EXCEEDED, DeadlineExceededError, remainingMs, withDeadline, withoutDeadline } from './deadline.js';
export { honourDeadlines } from './pool-deadline.js';
export { cutQueriesAtDeadline, type CutOptions, type DeadlineClient } from './query-deadline.js';

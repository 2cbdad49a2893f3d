// What the in-memory fakes of the use cases' ports share: their one instant, and the stand-in for a port method no test calls.

export const NOW = new Date('2026-01-01T00:00:00Z');

export function unused(): never {
  throw new Error('not used by these use cases');
}

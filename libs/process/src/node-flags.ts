/**
 * The Node.js flags every app process runs with (`npm start`'s apps, and the apps tests and
 * benchmarks start as processes of their own).
 *
 * `--experimental-async-context-frame`: AsyncLocalStorage, which carries each request's deadline
 * (libs/deadline) and MikroORM's contexts, kept in the async context frame instead of async hooks.
 * With async hooks, every promise the process creates calls an init hook once any
 * AsyncLocalStorage has been entered: promise-heavy code ran 1.75 times as long here (20 × 100,000
 * awaits in one run() each: 2,648 ms against 1,506 ms without a store), and 1,453 ms with this flag.
 * Node.js 24 uses the frame by default; on Node.js 22 (22.7 and later) this flag turns it on.
 */
export const APP_NODE_FLAGS: readonly string[] = ['--experimental-async-context-frame'];

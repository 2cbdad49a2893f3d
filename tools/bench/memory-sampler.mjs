// Preloaded into an app by `npm run bench:soak` (node --import): appends the process's memory to
// SOAK_MEMORY_FILE every SOAK_SAMPLE_MS, one JSON line per sample. Inside the process because the
// heap (used and total) cannot be read from outside it; RSS comes along so both are of one instant.
// With --expose-gc, a full collection runs first, so heapUsed is what the app holds, not where the
// collector's saw-tooth happened to be (a 10 MB swing between two samples otherwise).
import { appendFileSync } from 'node:fs';

const file = process.env.SOAK_MEMORY_FILE;
const everyMs = Number(process.env.SOAK_SAMPLE_MS ?? 10_000);
if (file) {
  const sample = () => {
    globalThis.gc?.();
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    appendFileSync(file, `${JSON.stringify({ at: Date.now(), rss, heapUsed, heapTotal, external, arrayBuffers })}\n`);
  };
  sample();
  // Unref'd: the sampler never keeps an app from exiting.
  setInterval(sample, everyMs).unref();
}

export interface RunServiceOptions {
  /** How long a graceful stop may take before the process exits anyway (status 1). */
  stopDeadlineMs?: number;
}

const STOP_DEADLINE_MS = 8_000;

/**
 * An app's `main`: loads config (a configuration error, there or while starting, exits 78 with
 * the message, which names the variable), starts, and on SIGINT, SIGTERM or the loss of a parent that started it over IPC
 * (`npm start`) stops gracefully: within the deadline, and at once on a second request.
 */
export async function runService<C>(
  name: string,
  load: () => C,
  start: (config: C) => Promise<{ close(): Promise<void> }>,
  isConfigError: (error: unknown) => boolean,
  options: RunServiceOptions = {},
): Promise<void> {
  let config: C;
  try {
    config = load();
  } catch (error) {
    if (!isConfigError(error)) throw error;
    console.error(`${name}: configuration error: ${(error as Error).message}`);
    process.exit(78);
  }
  let service: { close(): Promise<void> };
  try {
    service = await start(config);
  } catch (error) {
    // Some settings prove wrong only against what they configure (a key ring that cannot open
    // the keys in the database): the same exit as a malformed one.
    if (!isConfigError(error)) throw error;
    console.error(`${name}: configuration error: ${(error as Error).message}`);
    process.exit(78);
  }
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) {
      console.error(`${name}: ${reason} while stopping; exiting now`);
      process.exit(1);
    }
    stopping = true;
    const deadlineMs = options.stopDeadlineMs ?? STOP_DEADLINE_MS;
    setTimeout(() => {
      console.error(`${name}: did not stop within ${deadlineMs} ms; exiting now`);
      process.exit(1);
    }, deadlineMs).unref();
    service.close().then(
      () => process.exit(0),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop(signal));
  if (process.send) process.once('disconnect', () => stop('parent gone'));
}

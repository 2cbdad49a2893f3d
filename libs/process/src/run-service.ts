/**
 * An app's `main`: loads config (a configuration error exits 78 with the message, which names
 * the variable), starts, and on SIGINT, SIGTERM or the loss of a parent that started it over IPC
 * (`npm start`) stops gracefully.
 */
export async function runService<C>(
  name: string,
  load: () => C,
  start: (config: C) => Promise<{ close(): Promise<void> }>,
  isConfigError: (error: unknown) => boolean,
): Promise<void> {
  let config: C;
  try {
    config = load();
  } catch (error) {
    if (!isConfigError(error)) throw error;
    console.error(`${name}: configuration error: ${(error as Error).message}`);
    process.exit(78);
  }
  const service = await start(config);
  const stop = () =>
    service.close().then(
      () => process.exit(0),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, stop);
  if (process.send) process.once('disconnect', stop);
}

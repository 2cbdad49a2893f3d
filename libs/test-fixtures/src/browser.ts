import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

// Debian's chromium, not a browser Playwright downloads: playwright-core has no install step, and
// with an executablePath it never looks for one of its own.
export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Skips the suite where Chromium is missing on a developer's machine, saying why; in CI its absence
 * is a failure, since .ci/run installs it and a suite must not pass by skipping.
 */
export function requireChromium(suite: { skip(): void }): void {
  if (existsSync(CHROMIUM)) return;
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: .ci/run should have installed Debian's chromium`);
  console.warn(`    skipped: Debian chromium is not installed at ${CHROMIUM}; .ci/run installs it (apt-get install chromium)`);
  // Skipped outside CI only, for the reason just printed: Chromium is not installed on this machine.
  suite.skip();
}

/** Headless Chromium; `extraArgs` such as --host-resolver-rules. */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (installed by .ci/run), driven by playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

export const hasChromium = (): boolean => existsSync(CHROMIUM);

/**
 * Headless Chromium as tests use it: no sandbox (root in CI containers lacks the user namespaces it
 * needs), and nothing that would reach the network on its own.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

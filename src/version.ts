import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Tarsier's version, from its package.json: the one found above this module, whether it runs from
 * src/ (tsx, tests) or dist/src/ (npm start).
 */
function readVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'tarsier' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // no package.json here: look further up
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

export const TARSIER_VERSION = readVersion();

/** The User-Agent of Tarsier's own requests: layer and feed downloads, webhook deliveries. */
export const USER_AGENT = `tarsier/${TARSIER_VERSION}`;

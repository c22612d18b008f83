import type pg from 'pg';
import { expect } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { enabledSources } from '../../src/updater/sources.js';
import { silentLog } from './db.js';
import type { FeedServer } from './feed-server.js';
import { compressWith, tarball } from './tarball.js';

/** Red Hat's VEX archive (csaf_vex_<date>.tar.zst): a zstd tar of <year>/cve-….json, with the year directories. */
export function vexArchive(documents: Record<string, string | Buffer>): Buffer {
  const years = [...new Set(Object.keys(documents).map((path) => path.split('/')[0]!))].sort();
  return compressWith(
    'zstd',
    tarball([
      ...years.map((path) => ({ path, type: 'dir' as const })),
      ...Object.entries(documents).map(([path, content]) => ({ path, content })),
    ]),
  );
}

/** changes.csv / deletions.csv lines: "path","time". */
export const vexCsv = (rows: ReadonlyArray<readonly [string, string]>): string =>
  rows.map(([path, time]) => `"${path}","${time}"`).join('\n') + '\n';

/**
 * The feed's base under `base` as Red Hat lays it out: archive_latest.txt naming the archive of
 * every document, changes.csv (each document changed at `changedAt`, before the archive's date)
 * and deletions.csv.
 */
export function serveVexFeed(
  server: FeedServer,
  base: string,
  archiveDate: string,
  documents: Record<string, string | Buffer>,
  changedAt: string,
  deletions: ReadonlyArray<readonly [string, string]> = [],
): void {
  server.put(`${base}archive_latest.txt`, `csaf_vex_${archiveDate}.tar.zst\n`);
  server.put(`${base}csaf_vex_${archiveDate}.tar.zst`, vexArchive(documents));
  server.put(`${base}changes.csv`, vexCsv(Object.keys(documents).map((path) => [path, changedAt] as const)));
  server.put(`${base}deletions.csv`, deletions.length > 0 ? vexCsv(deletions) : '');
}

/**
 * Red Hat's documents (<year>/cve-….json → text) served under /vex/ (archived 2025-07-10, changed
 * on 2025-07-05), and one run of the rhel-vex updater reading them into the database; fails the
 * test when the run does.
 */
export async function runVexUpdater(pool: pg.Pool, server: FeedServer, documents: Record<string, string | Buffer>): Promise<void> {
  serveVexFeed(server, '/vex/', '2025-07-10', documents, '2025-07-05T09:56:23+00:00');
  const config = parseConfig(
    `clair:\n  updater:\n    enabledupdaters: [rhel-vex]\n    sources:\n      rhel-vex: { url: "${server.url('/vex/')}" }\n`,
  );
  const [source] = enabledSources(config.updater.enabledUpdaters);
  const result = await new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog }).run(source!);
  expect(result.error).toBeUndefined();
}

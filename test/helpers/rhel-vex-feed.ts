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

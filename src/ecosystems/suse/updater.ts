import { directory, type Updater } from '../../model/updater.js';
import { parseSuseOval, type SuseScope } from './oval.js';

/**
 * The products read, each from its `-affected` file (fixed, not affected and unfixed issues, CVE
 * indexed) under SUSE's own name. A fixed list rather than the directory listing: the listing is
 * an HTML page that also holds per-SP, patch, retired and unrelated products, and a wrong match
 * there would silently add or drop a distribution; a product missing upstream is skipped
 * (optional parts). The SLES file of a major holds every service pack (SP namespaces come from
 * its criteria); SLE Micro and Leap have one file per release, and SLE Micro 6 is named
 * `suse.linux.micro.*` upstream.
 */
const PRODUCTS: ReadonlyArray<{ readonly file: string; readonly scope: SuseScope }> = [
  { file: 'suse.linux.enterprise.server.12', scope: { distribution: 'sles', release: '12' } },
  { file: 'suse.linux.enterprise.server.15', scope: { distribution: 'sles', release: '15' } },
  { file: 'suse.linux.enterprise.server.16', scope: { distribution: 'sles', release: '16' } },
  ...['5.1', '5.2', '5.3', '5.4', '5.5'].map((v) => ({
    file: `suse.linux.enterprise.micro.${v}`,
    scope: { distribution: 'sle-micro', release: v } as const,
  })),
  ...['6.0', '6.1', '6.2'].map((v) => ({ file: `suse.linux.micro.${v}`, scope: { distribution: 'sle-micro', release: v } as const })),
  ...['15.3', '15.4', '15.5', '15.6', '16.0'].map((v) => ({
    file: `opensuse.leap.${v}`,
    scope: { distribution: 'opensuse-leap', release: v } as const,
  })),
];

/** SUSE OVAL: one part per product file (`<product>-affected.xml.gz`) under the configured base. */
export const suseUpdater = {
  name: 'suse',
  kind: 'vulnerabilities',
  async parts(base) {
    const root = directory(base);
    return PRODUCTS.map(({ file, scope }) => ({
      key: file,
      urls: [`${root}${file}-affected.xml.gz`],
      optional: true,
      parse: ([stream]) => parseSuseOval(stream!, scope),
    }));
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [suseUpdater];

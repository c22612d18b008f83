import { directory, type Enricher } from '../../model/updater.js';
import { parseNvdFeed } from './feed.js';

/** NVD's yearly JSON 2.0 feeds start in 2002. */
const FIRST_YEAR = 2002;

/**
 * NVD JSON 2.0 feeds (nvdcve-2.0-<year>.json.gz), one part per year: NVD updates the yearly files
 * as CVEs change, and an unchanged year is not downloaded again (ETag / Last-Modified / hash).
 */
export const nvdEnricher = {
  name: 'nvd',
  kind: 'enrichment',
  async parts(base) {
    const root = directory(base);
    const years: number[] = [];
    for (let year = FIRST_YEAR; year <= new Date().getUTCFullYear(); year++) years.push(year);
    return years.map((year) => ({
      key: String(year),
      urls: [`${root}nvdcve-2.0-${year}.json.gz`],
      optional: true,
      parse: ([file]) => parseNvdFeed(file!),
    }));
  },
} satisfies Enricher;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Enricher[] = [nvdEnricher];

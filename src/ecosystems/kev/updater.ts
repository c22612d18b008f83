import { readAll, type RiskSource } from '../../model/updater.js';
import { parseKevCatalog } from './catalog.js';

/**
 * CISA's Known Exploited Vulnerabilities catalog: one part, the JSON file that the configured URL
 * names (`https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json`),
 * a few MB parsed whole.
 */
export const kevSource = {
  name: 'kev',
  kind: 'risk',
  async parts(base) {
    return [{ key: 'catalog', urls: [base], parse: async ([file]) => parseKevCatalog(await readAll(file!)) }];
  },
} satisfies RiskSource;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly RiskSource[] = [kevSource];

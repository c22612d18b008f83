import { directory, readAll, type Updater } from '../../model/updater.js';
import { parsePhotonCveData } from './cve-data.js';

/**
 * Releases read by default. 1.0 and 2.0 are past their end of support (their files are still
 * published); a release whose file is missing upstream is skipped, not an error.
 */
export const PHOTON_RELEASES = ['3.0', '4.0', '5.0'] as const;

/** Photon OS CVE metadata: one part per release (`cve_data_photon<release>.json` under the base). */
export const photonUpdater = {
  name: 'photon',
  kind: 'vulnerabilities',
  async parts(base) {
    const root = directory(base);
    return PHOTON_RELEASES.map((release) => ({
      key: release,
      urls: [`${root}cve_data_photon${release}.json`],
      optional: true,
      // The runner parses no part whose files are all absent: a missing release is skipped, nothing withdrawn.
      parse: async ([file]) => parsePhotonCveData(await readAll(file!), release),
    }));
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [photonUpdater];

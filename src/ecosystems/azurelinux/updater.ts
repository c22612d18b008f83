import { directory, type Updater } from '../../model/updater.js';
import { parseAzureLinuxOval } from './oval.js';

/**
 * Microsoft's OVAL files under the base (by default the raw files of the repository's main branch,
 * https://raw.githubusercontent.com/microsoft/AzureLinuxVulnerabilityData/main/), one part each.
 * CBL-Mariner 2.0 is past its end of life: its file may go, which must not fail the run.
 */
export const AZURE_LINUX_FILES = [
  { file: 'cbl-mariner-2.0-oval.xml', namespace: 'mariner:2.0', optional: true },
  { file: 'azurelinux-3.0-oval.xml', namespace: 'azurelinux:3.0', optional: false },
] as const;

export const azureLinuxUpdater = {
  name: 'azurelinux',
  kind: 'vulnerabilities',
  async parts(base) {
    const root = directory(base);
    return AZURE_LINUX_FILES.map(({ file, namespace, optional }) => ({
      key: namespace,
      urls: [`${root}${file}`],
      optional,
      // The runner parses no part whose files are all absent: a missing file is skipped, nothing withdrawn.
      parse: async ([input]) => parseAzureLinuxOval(input!, namespace),
    }));
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [azureLinuxUpdater];

import { directory, type Updater } from '../../model/updater.js';
import { parseUbuntuOval } from './oval.js';
import { UBUNTU_RELEASES } from './releases.js';

/** Releases from 14.04 on (ESM releases still get OVAL data); a release without a file upstream is skipped. */
const OLDEST = 14.04;

/** Canonical's CVE OVAL: one part per Ubuntu release (com.ubuntu.<codename>.cve.oval.xml.bz2). */
export const ubuntuUpdater = {
  name: 'ubuntu',
  kind: 'vulnerabilities',
  async parts(base) {
    const root = directory(base);
    return Object.entries(UBUNTU_RELEASES)
      .filter(([, version]) => Number(version) >= OLDEST)
      .map(([codename, version]) => ({
        key: codename,
        urls: [`${root}com.ubuntu.${codename}.cve.oval.xml.bz2`],
        optional: true,
        parse: ([file]) => parseUbuntuOval(file!, `ubuntu:${version}`),
      }));
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [ubuntuUpdater];

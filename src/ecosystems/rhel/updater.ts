import { directory, type Updater } from '../../model/updater.js';
import { parseRedHatOval } from './oval.js';
import { rhelVexUpdater } from './vex-updater.js';

/** RHEL majors with OVAL v2 streams; CentOS, Rocky and AlmaLinux layers are matched against them. */
const MAJORS = [7, 8, 9, 10];

/** Red Hat OVAL v2, fixed and unpatched: one part per major (RHEL<N>/rhel-<N>-including-unpatched.oval.xml.bz2). */
export const rhelUpdater = {
  name: 'rhel',
  kind: 'vulnerabilities',
  async parts(base) {
    const root = directory(base);
    return MAJORS.map((major) => ({
      key: `rhel-${major}`,
      urls: [`${root}RHEL${major}/rhel-${major}-including-unpatched.oval.xml.bz2`],
      optional: true,
      parse: ([file]) => parseRedHatOval(file!, major),
    }));
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [rhelUpdater, rhelVexUpdater];

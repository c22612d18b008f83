import type { Updater } from '../../model/updater.js';
import { parseDebianTracker } from './tracker.js';

/** The Debian Security Tracker's JSON document: one part, every Debian release in it. */
export const debianUpdater = {
  name: 'debian',
  kind: 'vulnerabilities',
  async parts(base) {
    return [{ key: 'tracker', urls: [base], parse: ([document]) => parseDebianTracker(document!) }];
  },
} satisfies Updater;

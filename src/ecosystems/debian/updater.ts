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

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [debianUpdater];

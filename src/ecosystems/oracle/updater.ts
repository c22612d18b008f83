import { directory, type Updater } from '../../model/updater.js';
import { parseOracleOval } from './oval.js';

/** Oracle's ELSA OVAL, every release in one file. */
export const oracleUpdater = {
  name: 'oracle',
  kind: 'vulnerabilities',
  async parts(base) {
    return [{ key: 'elsa-all', urls: [`${directory(base)}com.oracle.elsa-all.xml.bz2`], parse: ([file]) => parseOracleOval(file!) }];
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [oracleUpdater];

import { directory, readAll, type Updater } from '../../model/updater.js';
import { chainguardLink, mergeSourceData, parseSecdb } from './secdb.js';

/** Branch directories in the secdb index (v3.19/, edge/), as links of an HTML listing. */
const BRANCH_LINK = /href="((?:v\d+\.\d+|edge))\/"/g;

/**
 * Alpine secdb: one part per branch (main.json and community.json together make its namespace
 * whole; a branch without community has only main).
 */
export const alpineUpdater = {
  name: 'alpine',
  kind: 'vulnerabilities',
  async parts(base, fetchText) {
    const root = directory(base);
    const branches = [...new Set([...(await fetchText(root)).matchAll(BRANCH_LINK)].map((m) => m[1]!))].sort();
    if (branches.length === 0) throw new Error(`the secdb index at ${root} lists no branches`);
    return branches.map((branch) => ({
      key: branch,
      urls: [`${root}${branch}/main.json`, `${root}${branch}/community.json`],
      optional: true,
      parse: async (files) => mergeSourceData(await Promise.all(files.map(async (f) => parseSecdb(await readAll(f))))),
    }));
  },
} satisfies Updater;

/** Wolfi's security.json (the secdb format): the rolling distribution, one file. */
export const wolfiUpdater = {
  name: 'wolfi',
  kind: 'vulnerabilities',
  async parts(base) {
    return [
      {
        key: 'security',
        urls: [base],
        parse: async ([file]) => parseSecdb(await readAll(file!), { namespace: 'wolfi:rolling', link: chainguardLink }),
      },
    ];
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [alpineUpdater, wolfiUpdater];

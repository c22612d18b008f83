import type { RiskSource } from '../../model/updater.js';
import { parseEpssScores } from './scores.js';

/**
 * FIRST's EPSS scores: one part, the daily CSV that the configured URL names
 * (`https://epss.empiricalsecurity.com/epss_scores-current.csv.gz`). The runner downloads it
 * conditionally and decompresses it; the rows are streamed to the store, never held whole.
 */
export const epssSource = {
  name: 'epss',
  kind: 'risk',
  async parts(base) {
    return [{ key: 'scores', urls: [base], parse: ([file]) => parseEpssScores(file!) }];
  },
} satisfies RiskSource;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly RiskSource[] = [epssSource];

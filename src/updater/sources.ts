/**
 * The defaults list of vulnerability sources, in the order a run visits them (NVD last, so its
 * data lands on the vulnerabilities the others just wrote). updater.enabledupdaters picks from it.
 */
import { alpineUpdater, wolfiUpdater } from '../ecosystems/alpine/updater.js';
import { amazonUpdater } from '../ecosystems/amazon/updater.js';
import { debianUpdater } from '../ecosystems/debian/updater.js';
import { nvdEnricher } from '../ecosystems/nvd/updater.js';
import { oracleUpdater } from '../ecosystems/oracle/updater.js';
import { rhelUpdater } from '../ecosystems/rhel/updater.js';
import { ubuntuUpdater } from '../ecosystems/ubuntu/updater.js';
import type { Source } from '../model/updater.js';

export const SOURCES: readonly Source[] = [
  debianUpdater,
  ubuntuUpdater,
  alpineUpdater,
  wolfiUpdater,
  rhelUpdater,
  oracleUpdater,
  amazonUpdater,
  nvdEnricher,
];

/** The enabled sources, in SOURCES order. */
export function enabledSources(names: readonly string[]): Source[] {
  return SOURCES.filter((s) => names.includes(s.name));
}

/**
 * The vulnerability sources' code, by the name the catalog (ecosystems/catalog.ts) gives them; the
 * catalog decides their order (NVD last) and default locations. updater.enabledupdaters picks from it.
 */
import { alpineUpdater, wolfiUpdater } from '../ecosystems/alpine/updater.js';
import { amazonUpdater } from '../ecosystems/amazon/updater.js';
import { azureLinuxUpdater } from '../ecosystems/azurelinux/updater.js';
import { debianUpdater } from '../ecosystems/debian/updater.js';
import { epssSource } from '../ecosystems/epss/updater.js';
import { kevSource } from '../ecosystems/kev/updater.js';
import { nvdEnricher } from '../ecosystems/nvd/updater.js';
import { oracleUpdater } from '../ecosystems/oracle/updater.js';
import { photonUpdater } from '../ecosystems/photon/updater.js';
import { rhelUpdater } from '../ecosystems/rhel/updater.js';
import { rhelVexUpdater } from '../ecosystems/rhel/vex-updater.js';
import { suseUpdater } from '../ecosystems/suse/updater.js';
import { ubuntuUpdater } from '../ecosystems/ubuntu/updater.js';
import { SOURCE_CATALOG } from '../ecosystems/catalog.js';
import type { Source } from '../model/updater.js';

const UPDATERS: readonly Source[] = [
  debianUpdater,
  ubuntuUpdater,
  alpineUpdater,
  wolfiUpdater,
  rhelUpdater,
  rhelVexUpdater,
  oracleUpdater,
  amazonUpdater,
  suseUpdater,
  photonUpdater,
  azureLinuxUpdater,
  nvdEnricher,
  epssSource,
  kevSource,
];

/** Every source, in the catalog's order. A catalog source without code here is a mistake caught at start-up (and by the catalog test). */
export const SOURCES: readonly Source[] = SOURCE_CATALOG.map(({ name }) => {
  const source = UPDATERS.find((u) => u.name === name);
  if (!source) throw new Error(`the catalog lists the source ${name}, which has no updater`);
  return source;
});

/** The enabled sources, in SOURCES order. */
export function enabledSources(names: readonly string[]): Source[] {
  return SOURCES.filter((s) => names.includes(s.name));
}

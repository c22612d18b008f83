/**
 * The vulnerability sources' code, found from the catalog (ecosystems/catalog.ts): each
 * SOURCE_CATALOG row names the folder under ecosystems/ whose `updater.ts` exports the source, by
 * the row's name, in its `sources`. So a source is its folder and its row; the catalog also decides
 * their order (NVD last) and default locations. updater.enabledupdaters picks from them.
 */
import { extname } from 'node:path';
import { SOURCE_CATALOG, type SourceEntry } from '../ecosystems/catalog.js';
import type { Source } from '../model/updater.js';

const ECOSYSTEMS = new URL('../ecosystems/', import.meta.url);
/** The extension of this build's modules: `.ts` when run from the sources (tsx, vitest), `.js` when compiled. */
const EXTENSION = extname(new URL(import.meta.url).pathname);

async function codeOf(entry: SourceEntry): Promise<Source> {
  const module = (await import(new URL(`${entry.folder}/updater${EXTENSION}`, ECOSYSTEMS).href)) as { sources?: readonly Source[] };
  const source = module.sources?.find((s) => s.name === entry.name);
  if (!source)
    throw new Error(`the catalog lists the source ${entry.name}, but ecosystems/${entry.folder}/updater does not export it in its sources`);
  return source;
}

/** Every source, in the catalog's order. A catalog source without code is a mistake caught at start-up (and by the catalog test). */
export const SOURCES: readonly Source[] = await Promise.all(SOURCE_CATALOG.map(codeOf));

/** The enabled sources, in SOURCES order. */
export function enabledSources(names: readonly string[]): Source[] {
  return SOURCES.filter((s) => names.includes(s.name));
}

import { NOT_VULNERABILITY_DATA, sourcesOfNamespace } from './ecosystems/catalog.js';
import { freshest, type NamespaceCoverage } from './model/coverage.js';
import { allNamespaceWriters, anyRecordWrittenBesides, knownNamespaces, namespaceWriters, type NamespaceWriter } from './store/coverage.js';
import type { Queryable } from './store/pool.js';
import { updaterStates } from './store/updater-state.js';

/**
 * What vulnerability data the store holds per namespace: the store's writers joined with the
 * catalog's sources. Enrichment and risk context (NVD, EPSS, KEV) are never vulnerability data:
 * they neither make a namespace's data known nor fresh, here or in the status time.
 */

function assemble(namespaces: readonly string[], writers: readonly NamespaceWriter[]): NamespaceCoverage[] {
  return namespaces.map((namespace) => {
    const sources = writers
      .filter((w) => w.namespace === namespace && !NOT_VULNERABILITY_DATA.includes(w.writer))
      .map((w) => ({ name: w.writer, updatedAt: w.updatedAt, ...(w.records !== undefined ? { records: w.records } : {}) }));
    return { namespace, sources, expectedSources: sourcesOfNamespace(namespace), updatedAt: freshest(sources) };
  });
}

/** The coverage of these namespaces (sorted, each once): a few index probes per namespace, whatever the data's size. */
export async function coverageOf(db: Queryable, namespaces: Iterable<string>): Promise<NamespaceCoverage[]> {
  const names = [...new Set(namespaces)].sort();
  return assemble(names, await namespaceWriters(db, names));
}

/** The coverage of every namespace the store knows (packages were matched in it): a few index probes each. */
export async function storeCoverage(db: Queryable): Promise<NamespaceCoverage[]> {
  return coverageOf(db, await knownNamespaces(db));
}

/** Every namespace the store knows, with record counts (reads every live record's index entry: for listings, not per request). */
export async function allCoverage(db: Queryable): Promise<NamespaceCoverage[]> {
  const { namespaces, writers } = await allNamespaceWriters(db);
  return assemble(namespaces, writers);
}

/** Whether the store holds any vulnerability data at all (enrichment and risk context do not count). */
export async function holdsVulnerabilityData(db: Queryable): Promise<boolean> {
  return anyRecordWrittenBesides(db, NOT_VULNERABILITY_DATA);
}

/** When vulnerability data was last brought up to date by any source (never enrichment or risk context); null: never. */
export async function vulnerabilityDataTime(db: Queryable): Promise<Date | null> {
  let newest: Date | null = null;
  for (const state of await updaterStates(db)) {
    if (NOT_VULNERABILITY_DATA.includes(state.name) || state.dataUpdatedAt === null) continue;
    if (newest === null || state.dataUpdatedAt > newest) newest = state.dataUpdatedAt;
  }
  return newest;
}

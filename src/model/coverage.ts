/**
 * Data coverage: whether the store holds vulnerability data for a namespace, from whom, and how
 * old it is. "No vulnerabilities" is an answer only where the data was there to look at; every
 * view of an image carries the coverage of the namespaces its packages are matched in.
 */

export interface SourceCoverage {
  /** An updater source's name, or `api` for records written through the API. */
  name: string;
  /**
   * When its data was last known current: the source's last successful update (for imported data,
   * the exporting installation's), or the newest record written through the API. Null: not recorded.
   */
  updatedAt: Date | null;
  /** Its live records in the namespace (listings only). */
  records?: number;
}

export interface NamespaceCoverage {
  namespace: string;
  /** Who wrote its live records; empty: the store holds no vulnerability data for it. */
  sources: SourceCoverage[];
  /** The sources that would bring its data (by the distribution catalog); empty: none covers its distribution. */
  expectedSources: string[];
  /** The freshest of its sources' times; null when it has no data, or no source's time is recorded. */
  updatedAt: Date | null;
}

/** current: data of at most the allowed age; stale: older, or of unknown age; missing: none. */
export const DATA_STATES = ['current', 'stale', 'missing'] as const;
export type DataState = (typeof DATA_STATES)[number];

/** maxAgeMs 0: any age is current. */
export function dataState(coverage: Pick<NamespaceCoverage, 'sources' | 'updatedAt'>, now: Date, maxAgeMs: number): DataState {
  if (coverage.sources.length === 0) return 'missing';
  if (coverage.updatedAt === null) return 'stale';
  return maxAgeMs > 0 && now.getTime() - coverage.updatedAt.getTime() > maxAgeMs ? 'stale' : 'current';
}

/** The worst state among an image's namespaces (an image with no namespace to match has nothing missing). */
export function worstState(states: readonly DataState[]): DataState {
  return states.includes('missing') ? 'missing' : states.includes('stale') ? 'stale' : 'current';
}

/** The freshest time among sources (null when none is recorded). */
export function freshest(sources: readonly SourceCoverage[]): Date | null {
  return sources.reduce<Date | null>(
    (latest, s) => (s.updatedAt !== null && (latest === null || s.updatedAt > latest) ? s.updatedAt : latest),
    null,
  );
}

/** Why a namespace's data cannot be relied on, in a sentence for people (undefined when it is current). */
export function dataProblem(coverage: NamespaceCoverage, state: DataState, maxAge: string): string | undefined {
  if (state === 'current') return undefined;
  if (state === 'missing') {
    if (coverage.expectedSources.length === 0) return `${coverage.namespace}: no vulnerability source covers this distribution`;
    const sources = coverage.expectedSources.join(' or ');
    return `${coverage.namespace}: no vulnerability data (the ${sources} source has not brought any: it has never updated successfully, or is not enabled, or does not cover this release)`;
  }
  const by = coverage.sources.map((s) => s.name).join(', ');
  if (coverage.updatedAt === null) return `${coverage.namespace}: the age of its vulnerability data (from ${by}) is not recorded`;
  return `${coverage.namespace}: its vulnerability data (from ${by}) was last updated ${coverage.updatedAt.toISOString()}, longer ago than ${maxAge}`;
}

/** A namespace's coverage with its state now. */
export interface NamespaceData extends NamespaceCoverage {
  state: DataState;
}

/** What an image's answer says of its data: the worst state among its namespaces, and each. */
export interface ImageData {
  state: DataState;
  namespaces: NamespaceData[];
}

/** The data of an image whose packages are matched in these namespaces (coverage: at least theirs). */
export function imageData(
  namespaces: readonly string[],
  coverage: ReadonlyMap<string, NamespaceCoverage>,
  now: Date,
  maxAgeMs: number,
): ImageData {
  const each = [...new Set(namespaces)].sort().map((name) => {
    const known = coverage.get(name) ?? { namespace: name, sources: [], expectedSources: [], updatedAt: null };
    return { ...known, state: dataState(known, now, maxAgeMs) };
  });
  return { state: worstState(each.map((n) => n.state)), namespaces: each };
}

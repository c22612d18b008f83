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

/** The freshest time among sources (null when none is recorded). */
export function freshest(sources: readonly SourceCoverage[]): Date | null {
  return sources.reduce<Date | null>(
    (latest, s) => (s.updatedAt !== null && (latest === null || s.updatedAt > latest) ? s.updatedAt : latest),
    null,
  );
}

/** A namespace's coverage with its state now. */
export interface NamespaceData extends NamespaceCoverage {
  state: DataState;
}

export const namespaceData = (coverage: NamespaceCoverage, now: Date, maxAgeMs: number): NamespaceData => ({
  ...coverage,
  state: dataState(coverage, now, maxAgeMs),
});

/** What an image's answer says of its data: the worst state among its namespaces, and each. */
export interface ImageData {
  state: DataState;
  namespaces: NamespaceData[];
}

/** The data of an image, from the coverage of the namespaces its packages are matched in (none: nothing is missing). */
export function imageData(coverage: readonly NamespaceCoverage[], now: Date, maxAgeMs: number): ImageData {
  const namespaces = coverage.map((c) => namespaceData(c, now, maxAgeMs));
  const states = new Set(namespaces.map((n) => n.state));
  return { state: states.has('missing') ? 'missing' : states.has('stale') ? 'stale' : 'current', namespaces };
}

/** The data of each image of a list, from the coverage of (at least) all their namespaces. */
export function imagesData(
  images: ReadonlyArray<{ namespaces: readonly string[] }>,
  coverage: readonly NamespaceCoverage[],
  now: Date,
  maxAgeMs: number,
): ImageData[] {
  const byName = new Map(coverage.map((c) => [c.namespace, c]));
  // A namespace created after the coverage was read has none: missing, as it is.
  const of = (name: string): NamespaceCoverage =>
    byName.get(name) ?? { namespace: name, sources: [], expectedSources: [], updatedAt: null };
  return images.map((i) => imageData(i.namespaces.map(of), now, maxAgeMs));
}

/** The namespaces of an image that have no data. */
export const missingNamespaces = (data: ImageData): string[] =>
  data.namespaces.filter((n) => n.state === 'missing').map((n) => n.namespace);

/**
 * Why each namespace's data cannot be relied on, a sentence for people each (none when all are
 * current); maxAge names the age limit stale data is over.
 */
export function dataProblems(data: ImageData, maxAge: string): string[] {
  return data.namespaces.flatMap((n) => {
    if (n.state === 'current') return [];
    if (n.state === 'missing') {
      if (n.expectedSources.length === 0) return [`${n.namespace}: no vulnerability source covers this distribution`];
      const sources = n.expectedSources.join(' or ');
      return [
        `${n.namespace}: no vulnerability data (the ${sources} source has not brought any: it has never updated successfully, or is not enabled, or does not cover this release)`,
      ];
    }
    const by = n.sources.map((s) => s.name).join(', ');
    if (n.updatedAt === null) return [`${n.namespace}: the age of its vulnerability data (from ${by}) is not recorded`];
    return [`${n.namespace}: its vulnerability data (from ${by}) was last updated ${n.updatedAt.toISOString()}, longer ago than ${maxAge}`];
  });
}

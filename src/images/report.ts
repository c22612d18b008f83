import { coverageOf } from '../coverage.js';
import type { NamespaceCoverage } from '../model/coverage.js';
import { countFindings, type SeverityCount } from '../model/finding-counts.js';
import type { Severity } from '../model/vulnerability.js';
import { readAncestry, type UnreadFile } from '../store/ancestries.js';
import type { AffectingVulnerability } from '../store/layers.js';
import type { Pool } from '../store/pool.js';

/**
 * What an image holds and what affects it, from the ancestry named by its digest: each package
 * with the layer that added it and the vulnerabilities affecting it. One reading for every view of
 * an image (the images API, Harbor's report, the scanner).
 */

/** A vulnerability affecting one of the image's packages: the store's, without its join key. */
export type ImageVulnerability = Omit<AffectingVulnerability, 'featureVersionId'>;

export interface ImagePackage {
  name: string;
  version: string;
  namespace: string;
  versionFormat: string;
  /** The digest of the layer that added it. */
  addedBy: string;
  vulnerabilities: ImageVulnerability[];
}

export interface ImageContents {
  digest: string;
  /** Layer digests, bottom first. */
  layers: string[];
  packages: ImagePackage[];
  /** Distinct vulnerabilities (by name) per severity, and how many of them an upgrade fixes (countFindings). */
  summary: Partial<Record<Severity, SeverityCount>>;
  /** Distinct vulnerabilities (by name) in CISA's KEV catalog. */
  knownExploited: number;
  /** What vulnerability data the store holds for each namespace its packages are matched in. */
  coverage: NamespaceCoverage[];
  /**
   * Files of its layers the listers could not read (a manifest that does not parse, a program or
   * archive over the limits), the first 100 of each layer, and how many there were: packages they
   * hold are not among packages, which must not read as "not installed".
   */
  unread: { files: UnreadFile[]; count: number };
}

/** The contents of the image with this manifest digest; undefined when it was never scanned. */
export async function imageContents(pool: Pool, digest: string): Promise<ImageContents | undefined> {
  const ancestry = await readAncestry(pool, digest);
  if (!ancestry) return undefined;
  const byFeature = new Map<number, ImageVulnerability[]>();
  for (const { featureVersionId, ...vulnerability } of ancestry.vulnerabilities) {
    const list = byFeature.get(featureVersionId) ?? [];
    list.push(vulnerability);
    byFeature.set(featureVersionId, list);
  }
  const packages = ancestry.features.map((f) => ({
    name: f.name,
    version: f.version,
    namespace: f.namespace,
    versionFormat: f.versionFormat,
    addedBy: ancestry.layers[f.position]!,
    vulnerabilities: byFeature.get(f.featureVersionId) ?? [],
  }));
  const coverage = await coverageOf(
    pool,
    packages.map((p) => p.namespace),
  );
  const counts = countFindings(packages.flatMap((p) => p.vulnerabilities));
  return {
    digest,
    layers: ancestry.layers,
    packages,
    summary: counts.bySeverity,
    knownExploited: counts.knownExploited,
    coverage,
    unread: ancestry.unread,
  };
}

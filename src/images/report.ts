import { coverageOf } from '../coverage.js';
import type { NamespaceCoverage } from '../model/coverage.js';
import { severityRank, type Severity } from '../model/vulnerability.js';
import { readAncestry } from '../store/ancestries.js';
import type { AffectingVulnerability } from '../store/layers.js';
import type { SeverityCount } from '../store/images.js';
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
  /** Distinct vulnerabilities (by name) per severity, and how many of them an upgrade fixes. */
  summary: Partial<Record<Severity, SeverityCount>>;
  /** Distinct vulnerabilities (by name) in CISA's KEV catalog. */
  knownExploited: number;
  /** What vulnerability data the store holds for each namespace its packages are matched in. */
  coverage: NamespaceCoverage[];
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
  const knownExploited = new Set(packages.flatMap((p) => p.vulnerabilities.filter((v) => v.risk.kev).map((v) => v.name))).size;
  const coverage = await coverageOf(
    pool,
    packages.map((p) => p.namespace),
  );
  return { digest, layers: ancestry.layers, packages, summary: summarize(packages), knownExploited, coverage };
}

function summarize(packages: readonly ImagePackage[]): Partial<Record<Severity, SeverityCount>> {
  const seen = new Map<string, { severity: Severity; fixable: boolean }>();
  for (const p of packages) {
    for (const v of p.vulnerabilities) {
      const known = seen.get(v.name);
      // A vulnerability counts once, at the highest severity any source gives it, and is fixable
      // when an upgrade of any affected package fixes it (as the images list counts).
      seen.set(v.name, {
        severity: known && severityRank(known.severity) > severityRank(v.severity) ? known.severity : v.severity,
        fixable: (known?.fixable ?? false) || v.fixedBy !== null,
      });
    }
  }
  const summary: Partial<Record<Severity, SeverityCount>> = {};
  for (const { severity, fixable } of seen.values()) {
    const count = (summary[severity] ??= { total: 0, fixable: 0 });
    count.total++;
    if (fixable) count.fixable++;
  }
  return summary;
}

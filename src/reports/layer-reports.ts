import {
  affectingVulnerabilities,
  findLayer,
  layerChain,
  layerFeatures,
  type AffectingVulnerability,
  type LayerFeature,
  type LayerRow,
  type ReportedFeature,
} from '../store/layers.js';
import type { Pool } from '../store/pool.js';
import type { BuildStamp, CachedReport, Fragment, LayerContents, ReportCache } from './report-cache.js';
import { gzipChunks, gzipReport } from './report-gzip.js';

/**
 * How the API that serves a layer report writes it. The report is its layer's fields around one
 * fragment per feature version; a fragment is the same in every report that lists the feature
 * version, so it is written once and kept (see ReportCache).
 */
export interface LayerReportFormat {
  /** Tells this format's reports of a layer from other formats' in the cache. */
  readonly name: string;
  /** Tells this format's fragments of a feature version from other formats'. */
  readonly fragmentName: string;
  /** Whether the report lists the layer's features; without them only the layer's row is read. */
  readonly features: boolean;
  /** Whether each feature shows the vulnerabilities affecting it; they are read only then. */
  readonly vulnerabilities: boolean;
  fragment(feature: LayerFeature, vulnerabilities: readonly AffectingVulnerability[]): Fragment;
  /** The report: the layer's fields and, when listed, its features in order, each from its fragment. */
  parts(layer: LayerRow, features: readonly ReportedFeature[], fragments: ReadonlyMap<number, Fragment>): ReportParts;
}

/** A report's bytes in order, its features apart (they are compressed in runs: see report-gzip.ts). */
export interface ReportParts {
  /** All of the report's bytes before its first feature. */
  readonly opening: Buffer;
  /** Per listed feature, in order, its bytes (the separator before it included). */
  readonly features: readonly (readonly Buffer[])[];
  /** All of the report's bytes after its last feature. */
  readonly closing: Buffer;
}

/** The report's body and the chunks its features are compressed in. */
function assemble(parts: ReportParts, features: readonly ReportedFeature[]): Pick<CachedReport, 'body' | 'chunks'> {
  const buffers = [parts.opening];
  const lengths = parts.features.map((feature) => {
    buffers.push(...feature);
    return feature.reduce((sum, b) => sum + b.length, 0);
  });
  buffers.push(parts.closing);
  const ids = features.map((f) => f.featureVersionId);
  return { body: Buffer.concat(buffers), chunks: gzipChunks(ids, lengths, parts.opening.length) };
}

/** The cache key of a layer's report in a format. */
export const reportKey = (layer: string, format: Pick<LayerReportFormat, 'name'>): string => `${layer}\0${format.name}`;

/**
 * Builds layer reports from cached parts: the layer's own fields, then one fragment per feature
 * version. Only the fragments the cache lacks are read and written; the rest is concatenation.
 */
export class LayerReports {
  readonly #pool: Pool;
  readonly #cache: ReportCache;

  constructor(pool: Pool, cache: ReportCache) {
    this.#pool = pool;
    this.#cache = cache;
  }

  get cache(): ReportCache {
    return this.#cache;
  }

  /** The report of the layer named, built or cached, with the key it is cached under; undefined when no such layer exists. */
  async report(name: string, format: LayerReportFormat): Promise<{ key: string; report: CachedReport } | undefined> {
    const key = reportKey(name, format);
    const cached = this.#cache.report(key);
    if (cached) return { key, report: cached };

    // Taken before reading: a change committed after this is either heard before the parts are
    // kept (they are not kept then) or invalidates them once heard.
    const stamp = this.#cache.stamp();
    const contents = await this.#layerContents(name, format.features, stamp);
    if (!contents) return undefined;
    const { layer, features, chain } = contents;
    if (!format.features) {
      const report: CachedReport = { ...assemble(format.parts(layer, [], new Map()), []), layers: chain, features: [] };
      return { key, report: this.#cache.keepReport(key, report, stamp) ?? report };
    }

    const fragments = new Map<number, Fragment>();
    const missing: number[] = [];
    for (const f of features) {
      const fragment = this.#cache.fragment(f.featureVersionId, format.fragmentName);
      if (fragment) fragments.set(f.featureVersionId, fragment);
      else missing.push(f.featureVersionId);
    }
    if (missing.length > 0) {
      const byFeature = new Map<number, AffectingVulnerability[]>();
      if (format.vulnerabilities) {
        for (const v of await affectingVulnerabilities(this.#pool, missing)) {
          const list = byFeature.get(v.featureVersionId);
          if (list) list.push(v);
          else byFeature.set(v.featureVersionId, [v]);
        }
      }
      for (const f of features) {
        if (fragments.has(f.featureVersionId)) continue;
        const fragment = format.fragment(f, byFeature.get(f.featureVersionId) ?? []);
        fragments.set(f.featureVersionId, fragment);
        this.#cache.keepFragment(f.featureVersionId, format.fragmentName, fragment, stamp);
      }
    }

    const report: CachedReport = {
      ...assemble(format.parts(layer, features, fragments), features),
      layers: chain,
      features: features.map((f) => f.featureVersionId),
    };
    return { key, report: this.#cache.keepReport(key, report, stamp) ?? report };
  }

  /**
   * The report gzip-compressed, kept with it once made. Its chunks are compressed once whatever the
   * report: a rebuild after a change compresses only the chunks holding what changed.
   */
  async gzip(key: string, report: CachedReport): Promise<Buffer> {
    if (report.gzip) return report.gzip;
    const gzip = await gzipReport(report, this.#cache);
    this.#cache.addGzip(key, report, gzip);
    return gzip;
  }

  /** The layer's row and, when wanted, its resolved features and chain (cached, or read and kept). */
  async #layerContents(name: string, wantFeatures: boolean, stamp: BuildStamp): Promise<LayerContents | undefined> {
    const cached = this.#cache.layerContents(name);
    if (cached) return cached;
    const layer = await findLayer(this.#pool, name);
    if (!layer) return undefined;
    if (!wantFeatures) return { layer, features: [], chain: [layer.id] };
    const [features, chain] = await Promise.all([layerFeatures(this.#pool, layer.id), layerChain(this.#pool, layer.id)]);
    const contents: LayerContents = { layer, features, chain };
    this.#cache.keepLayerContents(contents, stamp);
    return contents;
  }
}

import { affectingVulnerabilities, findLayer, layerChain, layerFeatures, type AffectingVulnerability } from '../../store/layers.js';
import type { Pool } from '../../store/pool.js';
import type { BuildStamp, CachedReport, Fragment, LayerContents, ReportCache } from './report-cache.js';
import { featureFragment, type Revision } from './serialize.js';

/** What a GET /v1/layers/{name} asks to see. */
export interface ReportView {
  revision: Revision;
  features: boolean;
  vulnerabilities: boolean;
}

const COMMA = Buffer.from(',');
const FEATURES_OPEN = Buffer.from(',"Features":[');
const FEATURES_CLOSE = Buffer.from(']}}');

/** The cache key of a report: the layer and the view. */
export const reportKey = (name: string, view: ReportView): string => `${name}\0${view.features}\0${view.vulnerabilities}\0${view.revision}`;

/**
 * Builds layer reports from cached parts: the layer's own fields, then one fragment per feature
 * version (serialized once, see ReportCache) with the layer that added it in between. Only the
 * fragments the cache lacks are read and serialized; the rest is concatenation.
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
  async report(name: string, view: ReportView): Promise<{ key: string; report: CachedReport } | undefined> {
    const key = reportKey(name, view);
    const cached = this.#cache.report(key);
    if (cached) return { key, report: cached };

    // Taken before reading: a change committed after this is either heard before the parts are
    // kept (they are not kept then) or invalidates them once heard.
    const stamp = this.#cache.stamp();
    const contents = await this.#layerContents(name, view.features, stamp);
    if (!contents) return undefined;
    const { layer, features, chain } = contents;
    const header = JSON.stringify({
      Layer: {
        Name: layer.name,
        [view.revision === 'A' ? 'Namespace' : 'NamespaceName']: layer.namespace ?? undefined,
        ParentName: layer.parentName ?? undefined,
        IndexedByVersion: layer.indexedByVersion,
      },
    });
    if (!view.features) {
      const report: CachedReport = { body: Buffer.from(header), layers: chain, features: [] };
      return { key, report: this.#cache.keepReport(key, report, stamp) ?? report };
    }

    const fragmentView = `${view.revision}${view.vulnerabilities ? '+v' : ''}`;
    const fragments = new Map<number, Fragment>();
    const missing: number[] = [];
    for (const f of features) {
      const fragment = this.#cache.fragment(f.featureVersionId, fragmentView);
      if (fragment) fragments.set(f.featureVersionId, fragment);
      else missing.push(f.featureVersionId);
    }
    if (missing.length > 0) {
      const byFeature = new Map<number, AffectingVulnerability[]>();
      if (view.vulnerabilities) {
        for (const v of await affectingVulnerabilities(this.#pool, missing)) {
          const list = byFeature.get(v.featureVersionId);
          if (list) list.push(v);
          else byFeature.set(v.featureVersionId, [v]);
        }
      }
      for (const f of features) {
        if (fragments.has(f.featureVersionId)) continue;
        const text = featureFragment(f, byFeature.get(f.featureVersionId) ?? [], view.revision, view.vulnerabilities);
        const fragment: Fragment = { head: Buffer.from(text.head), tail: Buffer.from(text.tail) };
        fragments.set(f.featureVersionId, fragment);
        this.#cache.keepFragment(f.featureVersionId, fragmentView, fragment, stamp);
      }
    }

    const addedBy = new Map<string, Buffer>();
    const parts: Buffer[] = [Buffer.from(header.slice(0, -2)), FEATURES_OPEN];
    features.forEach((f, i) => {
      const fragment = fragments.get(f.featureVersionId)!;
      let added = addedBy.get(f.addedBy);
      if (!added) addedBy.set(f.addedBy, (added = Buffer.from(`,"AddedBy":${JSON.stringify(f.addedBy)}`)));
      if (i > 0) parts.push(COMMA);
      parts.push(fragment.head, added, fragment.tail);
    });
    parts.push(FEATURES_CLOSE);
    const report: CachedReport = {
      body: Buffer.concat(parts),
      layers: chain,
      features: features.map((f) => f.featureVersionId),
    };
    return { key, report: this.#cache.keepReport(key, report, stamp) ?? report };
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

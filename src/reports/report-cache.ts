import type { LayerRow, ReportedFeature } from '../store/layers.js';
import type { ReportChangeEvents, ReportChangeKind } from '../store/report-changes.js';

/**
 * Layer reports and the fragments they are assembled from, kept per replica as bytes ready to send.
 * CI pipelines and dashboards ask for the same reports again and again; a large image's report is
 * hundreds of KiB of JSON. Most of it is the same for every image (a feature version and the
 * vulnerabilities affecting it), so it is serialized once per feature version (a fragment), and a
 * report is the concatenation of its features' fragments. A layer's resolved features are kept
 * too: they change only when the layer or an ancestor is re-indexed or deleted, so a vulnerability
 * change costs only the fragments it touches.
 *
 * Staleness: the database announces each committed change (migration 0003's triggers, heard
 * through ReportChanges) with exactly the feature versions and layers it touched; only the
 * fragments and reports that hold them are dropped. A replica therefore serves a report at most
 * the notification's delivery delay after a change committed elsewhere (milliseconds), its own
 * writes at once (the write routes wait until their change is heard), and nothing from the cache
 * while it is not listening.
 */

/**
 * One feature of a report, the bytes before and after the layer that added it (in v1's JSON,
 * `{"Name":…,"Version":"…"` and `,"Vulnerabilities":[…]}` around `,"AddedBy":…`).
 */
export interface Fragment {
  readonly head: Buffer;
  readonly tail: Buffer;
}

/** A layer's row and resolved features: what its reports show besides the fragments. */
export interface LayerContents {
  readonly layer: LayerRow;
  readonly features: readonly ReportedFeature[];
  /** The layer and its ancestors: a change to any of them drops this. */
  readonly chain: readonly number[];
}

/** Bytes start (inclusive) to end (exclusive) of a buffer. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export interface CachedReport {
  readonly body: Buffer;
  /** The layers and feature versions it shows: a change to any of them drops it. */
  readonly layers: readonly number[];
  readonly features: readonly number[];
  /** The runs of features the body is gzip-compressed in, each apart (see report-gzip.ts); none without features. */
  readonly chunks: readonly ByteRange[];
  /** The body gzip-compressed, made on the first request that accepts gzip. */
  gzip?: Buffer;
}

/** Bounds memory whatever the number of layers and feature versions. */
const DEFAULT_REPORT_BYTES = 64 * 1024 * 1024;
const DEFAULT_FRAGMENT_BYTES = 64 * 1024 * 1024;
const DEFAULT_LAYER_BYTES = 16 * 1024 * 1024;
/** A compressed chunk is a fifth to a twenty-fifth of its bytes: this holds the chunks of more reports than the report bound does. */
const DEFAULT_GZIP_CHUNK_BYTES = 16 * 1024 * 1024;
/** A resolved feature held in memory, roughly: its strings and the object around them. */
const FEATURE_BYTES = 160;
/** Changes remembered for builds in flight; a build that began more changes ago is not kept. */
const RECENT_CHANGES = 1024;

/** Entries in least-recently-used order, evicted past a byte bound. */
class BoundedMap<V> {
  readonly #entries = new Map<string, { value: V; bytes: number }>();
  readonly #maxBytes: number;
  readonly #onDelete: (key: string, value: V) => void;
  #bytes = 0;

  constructor(maxBytes: number, onDelete: (key: string, value: V) => void = () => undefined) {
    this.#maxBytes = maxBytes;
    this.#onDelete = onDelete;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    // Re-insert: Map order is the LRU order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Stores value unless it alone would take over a quarter of the bound. */
  set(key: string, value: V, bytes: number): boolean {
    if (bytes > this.#maxBytes / 4) return false;
    this.delete(key);
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    for (const [oldest] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.delete(oldest);
    }
    return true;
  }

  grow(key: string, bytes: number): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    entry.bytes += bytes;
    this.#bytes += bytes;
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
    this.#onDelete(key, entry.value);
  }

  clear(): void {
    for (const key of [...this.#entries.keys()]) this.delete(key);
  }
}

/** Keys of the entries that depend on an id. */
class DependencyIndex {
  readonly #byId = new Map<number, Set<string>>();

  add(ids: readonly number[], key: string): void {
    for (const id of ids) {
      let keys = this.#byId.get(id);
      if (!keys) this.#byId.set(id, (keys = new Set()));
      keys.add(key);
    }
  }

  remove(ids: readonly number[], key: string): void {
    for (const id of ids) {
      const keys = this.#byId.get(id);
      keys?.delete(key);
      if (keys?.size === 0) this.#byId.delete(id);
    }
  }

  keysOf(id: number): string[] {
    return [...(this.#byId.get(id) ?? [])];
  }
}

/** When a build began, in changes heard: what it read may have changed since if it is older than the cache's count. */
export type BuildStamp = number;

/** The changes that name ids (a risk change is remembered as 'all'). */
type IdKind = Exclude<ReportChangeKind, 'risk'>;

interface HeardChange {
  kind: IdKind | 'all';
  /** Packed: a big import announces many thousands of ids, and the last RECENT_CHANGES are kept. */
  ids: Float64Array;
}

export class ReportCache implements ReportChangeEvents {
  readonly #reports: BoundedMap<CachedReport>;
  readonly #fragments: BoundedMap<Fragment>;
  readonly #layers: BoundedMap<LayerContents>;
  readonly #gzipChunks: BoundedMap<Buffer>;
  readonly #reportsByLayer = new DependencyIndex();
  readonly #contentsByLayer = new DependencyIndex();
  readonly #reportsByFeature = new DependencyIndex();
  readonly #fragmentsByFeature = new DependencyIndex();
  /** The last RECENT_CHANGES changes heard; changes heard in all = #heard. */
  readonly #recent: HeardChange[] = [];
  #heard = 0;
  #gathered: { stamp: BuildStamp; heard: number; changed: 'all' | Record<IdKind, Set<number>> } | undefined;
  #listening = false;

  constructor(limits: { reportBytes?: number; fragmentBytes?: number; layerBytes?: number; gzipChunkBytes?: number } = {}) {
    this.#reports = new BoundedMap(limits.reportBytes ?? DEFAULT_REPORT_BYTES, (key, report) => {
      this.#reportsByLayer.remove(report.layers, key);
      this.#reportsByFeature.remove(report.features, key);
    });
    this.#fragments = new BoundedMap(limits.fragmentBytes ?? DEFAULT_FRAGMENT_BYTES, (key) =>
      this.#fragmentsByFeature.remove([fragmentFeature(key)], key),
    );
    this.#layers = new BoundedMap(limits.layerBytes ?? DEFAULT_LAYER_BYTES, (key, contents) =>
      this.#contentsByLayer.remove(contents.chain, key),
    );
    this.#gzipChunks = new BoundedMap(limits.gzipChunkBytes ?? DEFAULT_GZIP_CHUNK_BYTES);
  }

  /** Bytes held (for tests and metrics); layers' are estimated. */
  get bytes(): { reports: number; fragments: number; layers: number; gzipChunks: number } {
    return {
      reports: this.#reports.bytes,
      fragments: this.#fragments.bytes,
      layers: this.#layers.bytes,
      gzipChunks: this.#gzipChunks.bytes,
    };
  }

  /** Whether the cache serves anything: only while changes are heard. */
  get live(): boolean {
    return this.#listening;
  }

  stamp(): BuildStamp {
    return this.#heard;
  }

  report(key: string): CachedReport | undefined {
    return this.#listening ? this.#reports.get(key) : undefined;
  }

  /** Keeps a report built from what was read after stamp, unless something it shows changed since. */
  keepReport(key: string, report: CachedReport, stamp: BuildStamp): CachedReport | undefined {
    if (!this.#unchangedSince(stamp, report.layers, report.features)) return undefined;
    if (!this.#reports.set(key, report, report.body.length)) return undefined;
    this.#reportsByLayer.add(report.layers, key);
    this.#reportsByFeature.add(report.features, key);
    return report;
  }

  /** Records the gzip form of the report stored under key, counting it against the bound. */
  addGzip(key: string, report: CachedReport, gzip: Buffer): void {
    if (report.gzip || this.#reports.get(key) !== report) return;
    report.gzip = gzip;
    this.#reports.grow(key, gzip.length);
  }

  /**
   * The compressed form of a report chunk, by the digest of its bytes. Kept by content, it cannot
   * go stale: it is served whether or not changes are heard, and no change drops it.
   */
  gzipChunk(digest: string): Buffer | undefined {
    return this.#gzipChunks.get(digest);
  }

  keepGzipChunk(digest: string, deflated: Buffer): void {
    this.#gzipChunks.set(digest, deflated, digest.length + deflated.length);
  }

  layerContents(name: string): LayerContents | undefined {
    return this.#listening ? this.#layers.get(name) : undefined;
  }

  keepLayerContents(contents: LayerContents, stamp: BuildStamp): void {
    if (!this.#unchangedSince(stamp, contents.chain, [])) return;
    const name = contents.layer.name;
    if (this.#layers.set(name, contents, FEATURE_BYTES * (contents.features.length + 1))) this.#contentsByLayer.add(contents.chain, name);
  }

  fragment(featureVersionId: number, view: string): Fragment | undefined {
    return this.#listening ? this.#fragments.get(fragmentKey(featureVersionId, view)) : undefined;
  }

  keepFragment(featureVersionId: number, view: string, fragment: Fragment, stamp: BuildStamp): void {
    if (!this.#unchangedSince(stamp, [], [featureVersionId])) return;
    const key = fragmentKey(featureVersionId, view);
    if (this.#fragments.set(key, fragment, fragment.head.length + fragment.tail.length)) {
      this.#fragmentsByFeature.add([featureVersionId], key);
    }
  }

  changed(kind: ReportChangeKind, ids: readonly number[]): void {
    if (kind === 'risk') {
      // EPSS or KEV data changed: every fragment may show it. Layers' resolved features stay.
      this.#remember({ kind: 'all', ids: new Float64Array() });
      this.#reports.clear();
      this.#fragments.clear();
      return;
    }
    this.#remember({ kind, ids: Float64Array.from(ids) });
    for (const id of ids) {
      if (kind === 'features') {
        for (const key of this.#reportsByFeature.keysOf(id)) this.#reports.delete(key);
        for (const key of this.#fragmentsByFeature.keysOf(id)) this.#fragments.delete(key);
      } else {
        for (const key of this.#reportsByLayer.keysOf(id)) this.#reports.delete(key);
        for (const key of this.#contentsByLayer.keysOf(id)) this.#layers.delete(key);
      }
    }
  }

  listening(): void {
    this.#forget();
    this.#listening = true;
  }

  lost(): void {
    this.#listening = false;
    this.#forget();
  }

  #forget(): void {
    this.#remember({ kind: 'all', ids: new Float64Array() });
    this.#reports.clear();
    this.#fragments.clear();
    this.#layers.clear();
  }

  #remember(change: HeardChange): void {
    this.#heard++;
    this.#recent.push(change);
    if (this.#recent.length > RECENT_CHANGES) this.#recent.shift();
  }

  /** Whether no change heard after stamp touches these layers or feature versions. */
  #unchangedSince(stamp: BuildStamp, layers: readonly number[], features: readonly number[]): boolean {
    if (!this.#listening) return false;
    if (stamp === this.#heard) return true;
    const changed = this.#changedSince(stamp);
    return changed !== 'all' && !layers.some((id) => changed.layers.has(id)) && !features.some((id) => changed.features.has(id));
  }

  /** The ids changed since stamp, gathered once per stamp and count heard (a build keeps many parts). */
  #changedSince(stamp: BuildStamp): 'all' | Record<IdKind, Set<number>> {
    if (this.#gathered?.stamp === stamp && this.#gathered.heard === this.#heard) return this.#gathered.changed;
    const missed = this.#heard - stamp;
    const changes = this.#recent.slice(-missed);
    let changed: 'all' | Record<IdKind, Set<number>> = { layers: new Set(), features: new Set() };
    if (missed > this.#recent.length || changes.some((change) => change.kind === 'all')) changed = 'all';
    else for (const change of changes) for (const id of change.ids) changed[change.kind as IdKind].add(id);
    this.#gathered = { stamp, heard: this.#heard, changed };
    return changed;
  }
}

const fragmentKey = (featureVersionId: number, view: string): string => `${featureVersionId}\0${view}`;
const fragmentFeature = (key: string): number => Number(key.slice(0, key.indexOf('\0')));

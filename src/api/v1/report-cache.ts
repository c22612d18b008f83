/**
 * Serialized layer reports, kept per replica and reused while the data generation is unchanged.
 * CI pipelines and dashboards ask for the same reports again and again; a report of a large image
 * is hundreds of KiB of JSON that costs tens of milliseconds to build.
 */
export interface CachedReport {
  readonly generation: number;
  readonly body: string;
  readonly storedAt: number;
  /** The body gzip-compressed, made on the first request that accepts gzip. */
  gzip?: Buffer;
}

/** Bounds memory whatever the number of layers. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
/** A safety net: even without a generation bump (a replica died between commit and bump), reports are rebuilt this often. */
const MAX_AGE_MS = 5 * 60_000;

export class ReportCache {
  readonly #entries = new Map<string, CachedReport>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes = DEFAULT_MAX_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** The report cached for key at this generation, if still fresh (its gzip form may be added). */
  get(key: string, generation: number, now = Date.now()): CachedReport | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.generation !== generation || now - entry.storedAt > MAX_AGE_MS) {
      this.#delete(key, entry);
      return undefined;
    }
    // Re-insert: Map order is the LRU order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry;
  }

  /** Records the gzip form of the entry stored under key, counting it against the bound. */
  addGzip(key: string, entry: CachedReport, gzip: Buffer): void {
    if (entry.gzip || this.#entries.get(key) !== entry) return;
    entry.gzip = gzip;
    this.#bytes += gzip.length;
  }

  set(key: string, generation: number, body: string, now = Date.now()): CachedReport | undefined {
    const size = body.length * 2;
    if (size > this.#maxBytes / 4) return undefined;
    const previous = this.#entries.get(key);
    if (previous) this.#delete(key, previous);
    const entry: CachedReport = { generation, body, storedAt: now };
    this.#entries.set(key, entry);
    this.#bytes += size;
    for (const [oldest, e] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#delete(oldest, e);
    }
    return this.#entries.get(key);
  }

  #delete(key: string, entry: CachedReport): void {
    this.#entries.delete(key);
    this.#bytes -= entry.body.length * 2 + (entry.gzip?.length ?? 0);
  }
}

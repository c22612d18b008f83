import { CURRENT_INDEXING, isCurrentIndexing } from '../ecosystems/index.js';
import { TarsierError } from '../errors.js';
import type { LayerScan } from '../model/layer.js';
import { findScanByHash } from '../store/ancestries.js';
import { loadScan, saveScan } from '../store/layers.js';
import { leaseOwner, withLease } from '../store/locks.js';
import { withTransaction, type Pool } from '../store/pool.js';
import { redactLocation } from './fetch.js';
import type { Indexer, LayerSource } from './indexer.js';
import { SharedWork } from './shared-work.js';

/**
 * A layer of the ancestry API (or of an image: its hash is then the blob digest), identified by
 * its hash. Headers (Authorization and the like) are never stored or logged.
 */
export interface LayerScanRequest extends LayerSource {
  readonly hash: string;
}

export interface ScannedLayer {
  /** The layer_scan row (key = the hash). */
  readonly scanId: number;
  readonly scan: LayerScan;
}

interface ScanLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** A replica renews its lease on a hash while scanning it; a dead replica's lease lapses after this. */
const LEASE_TTL_MS = 60_000;
const LEASE_POLL_MS = 200;
/** The download timeout assumed when none is given (the configuration's default). */
const DEFAULT_DOWNLOAD_TIMEOUT_MS = 15 * 60_000;

/**
 * Scans by layer hash for the ancestry API. A hash already scanned by the current indexer
 * is reused and never downloaded again; the same hash requested concurrently is downloaded once:
 * in one process later requests join the first, across replicas a lease (`scan/<hash>` in the
 * lock table) makes the others wait and then reuse the stored scan. The download and the reading
 * are the Indexer's (`scan()`), so limits and error messages are those of the v1 API.
 */
export class LayerScans {
  readonly #pool: Pool;
  readonly #indexer: Pick<Indexer, 'scan'>;
  readonly #log: ScanLog | undefined;
  readonly #leaseWaitMs: number;
  readonly #owner = leaseOwner('layer-scans');
  readonly #inFlight = new SharedWork<ScannedLayer>();

  /** downloadTimeoutMs: how long another replica's scan may take before its lease lapses and this one takes over. */
  constructor(deps: { pool: Pool; indexer: Pick<Indexer, 'scan'>; log?: ScanLog; downloadTimeoutMs?: number }) {
    this.#pool = deps.pool;
    this.#indexer = deps.indexer;
    this.#log = deps.log;
    this.#leaseWaitMs = (deps.downloadTimeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS) + LEASE_TTL_MS;
  }

  /**
   * The scan of the layer: the stored one when current, else downloaded, read and stored. signal:
   * the requester went away; the scan stops once every request waiting for the hash has gone.
   */
  async scan(request: LayerScanRequest, signal?: AbortSignal): Promise<ScannedLayer> {
    const stored = await this.stored(request.hash);
    if (stored) return stored;
    // An upload's bytes come from its own request alone: joining another upload of the same digest
    // would fail with that client when it gives up, its own body unread. Uploads of one digest
    // still take turns through the lease, and the later ones find the first one's scan stored.
    if (request.body) return this.#scanOnce(request, signal ?? new AbortController().signal);
    return this.#inFlight.run(request.hash, signal, (shared) => this.#scanOnce(request, shared));
  }

  /** Whether the current indexer (its version and fingerprint) has scanned the hash. */
  async isScanned(hash: string): Promise<boolean> {
    const stored = await findScanByHash(this.#pool, hash);
    return stored !== undefined && isCurrentIndexing(stored);
  }

  /** The hash's scan by the current indexer, read from the store; undefined when it needs scanning. */
  async stored(hash: string): Promise<ScannedLayer | undefined> {
    const stored = await findScanByHash(this.#pool, hash);
    if (!stored || !isCurrentIndexing(stored)) return undefined;
    return { scanId: stored.id, scan: await loadScan(this.#pool, stored.id) };
  }

  async #scanOnce(request: LayerScanRequest, signal: AbortSignal): Promise<ScannedLayer> {
    const terms = {
      owner: this.#owner,
      ttlMs: LEASE_TTL_MS,
      wait: {
        pollMs: LEASE_POLL_MS,
        maxMs: this.#leaseWaitMs,
        signal,
        tooLong: () => new TarsierError('unavailable', 'the layer is being scanned by another server for too long; retry later'),
      },
      onRenewalFailure: (err: unknown) => this.#log?.warn({ err, hash: request.hash }, 'layer scan lease renewal failed'),
    };
    const leased = await withLease(this.#pool, `scan/${request.hash}`, terms, async () => {
      // Another replica may have scanned this hash while we waited for the lease.
      const stored = await this.stored(request.hash);
      if (stored) return stored;
      const started = performance.now();
      const scan = await this.#indexer.scan(request, signal);
      const scanId = await withTransaction(this.#pool, (client) => saveScan(client, request.hash, scan, CURRENT_INDEXING));
      this.#log?.info(
        { hash: request.hash, location: redactLocation(request.path), seconds: (performance.now() - started) / 1000 },
        'layer scanned',
      );
      return { scanId, scan };
    });
    return leased.value;
  }
}

import type { Logger } from 'pino';
import {
  APPLICATION_LISTERS,
  CURRENT_INDEXING,
  FILE_LISTERS,
  isCurrentIndexing,
  NAMESPACE_DETECTORS,
  PACKAGE_LISTERS,
} from '../ecosystems/index.js';
import { MATCHING } from '../ecosystems/matching.js';
import { badRequest, TarsierError, unprocessable } from '../errors.js';
import type { LayerScan } from '../model/layer.js';
import type { Metrics } from '../metrics.js';
import { findLayer, saveLayer, type LayerRow } from '../store/layers.js';
import { leaseOwner, withLease } from '../store/locks.js';
import { withTransaction, type Pool } from '../store/pool.js';
import type { Readable } from 'node:stream';
import { readLayerArchive, type ArchiveLimits, type LayerContents, type LayerFormat } from './archive.js';
import { verifiedRead, type DigestOf } from './digest.js';
import { openLayer, readUpload, redactLocation, type FetchSettings } from './fetch.js';

/** The 400's message for a ParentName that is not indexed (Clair v2's, matched by Quay). */
export const UNKNOWN_PARENT_MESSAGE = 'worker: parent layer is unknown, it must be processed first';
import { scanContents, wantedBy } from './scan.js';
import { SharedWork } from './shared-work.js';

export interface IndexRequest {
  readonly name: string;
  readonly path: string;
  /** HTTP headers for the download (Authorization and the like); never stored or logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly parentName: string | undefined;
  readonly format: LayerFormat;
}

/** Where a layer's bytes come from, and what they must hash to. */
export interface LayerSource {
  /** Downloaded from here with these headers, unless body is given; then it only names the layer in logs. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly format: LayerFormat;
  /** The compressed bytes, sent by the client (PUT /tarsier/v1/layers/{digest}); read once, never stored. */
  readonly body?: Readable;
  /** `sha256:<hex>` the layer must have, verified over the whole blob: see digestOf. */
  readonly digest?: string;
  /** What digest is of: the compressed bytes (a registry blob digest; the default), or those or the tar they hold. */
  readonly digestOf?: DigestOf;
}

export interface IndexerSettings {
  readonly fetch: FetchSettings;
  readonly limits: ArchiveLimits;
}

/** A replica renews its lease on a layer while indexing it; a dead replica's lease lapses after this. */
const LEASE_TTL_MS = 60_000;
const LEASE_POLL_MS = 200;

const wants = wantedBy(PACKAGE_LISTERS, NAMESPACE_DETECTORS, APPLICATION_LISTERS);

/**
 * Indexes v1 layers: download, read, scan, store. A layer already indexed by the current indexer
 * (its version and fingerprint: isCurrentIndexing) is returned at once. The same layer requested twice at once is downloaded once: in one
 * process the second request joins the first; across replicas a lease makes the others wait.
 */
export class Indexer {
  readonly #pool: Pool;
  readonly #settings: IndexerSettings;
  readonly #log: Logger;
  readonly #metrics: Metrics | undefined;
  readonly #owner = leaseOwner('indexer');
  readonly #inFlight = new SharedWork<LayerRow>();

  constructor(deps: { pool: Pool; settings: IndexerSettings; log: Logger; metrics?: Metrics }) {
    this.#pool = deps.pool;
    this.#settings = deps.settings;
    this.#log = deps.log.child({ component: 'indexer' });
    this.#metrics = deps.metrics;
  }

  /**
   * signal: the requester went away. Indexing stops (download, decompressors, walk) once every
   * request waiting for the same layer has gone.
   */
  async index(request: IndexRequest, signal?: AbortSignal): Promise<LayerRow> {
    const existing = await findLayer(this.#pool, request.name);
    if (existing && isCurrentIndexing(existing)) return existing;
    if (this.#inFlight.has(request.name)) this.#log.debug({ layer: request.name }, 'joining the indexing of the layer under way');
    return this.#inFlight.run(request.name, signal, (shared) => this.#indexOnce(request, shared));
  }

  async #indexOnce(request: IndexRequest, signal: AbortSignal): Promise<LayerRow> {
    await this.#parentOf(request, await findLayer(this.#pool, request.name));
    const terms = {
      owner: this.#owner,
      ttlMs: LEASE_TTL_MS,
      wait: {
        pollMs: LEASE_POLL_MS,
        maxMs: this.#settings.fetch.downloadTimeoutMs + LEASE_TTL_MS,
        signal,
        tooLong: () => new TarsierError('unavailable', 'the layer is being indexed by another server for too long; retry later'),
      },
      onRenewalFailure: (err: unknown) => this.#log.warn({ err, layer: request.name }, 'layer lease renewal failed'),
    };
    const leased = await withLease(this.#pool, `layer/${request.name}`, terms, async () => {
      const started = performance.now();
      try {
        // Another replica may have finished this layer while we waited for the lease.
        const existing = await findLayer(this.#pool, request.name);
        if (existing && isCurrentIndexing(existing)) return existing;
        const parent = await this.#parentOf(request, existing);
        const scan = await this.scan(request, signal);
        await withTransaction(this.#pool, (client) =>
          saveLayer(client, { name: request.name, parent, scan, indexing: CURRENT_INDEXING, existing, matching: MATCHING }),
        );
        const seconds = (performance.now() - started) / 1000;
        this.#metrics?.layerIndexDuration.observe({ outcome: 'indexed' }, seconds);
        this.#log.info({ layer: request.name, location: redactLocation(request.path), seconds }, 'layer indexed');
        return (await findLayer(this.#pool, request.name))!;
      } catch (err) {
        const outcome = err instanceof TarsierError ? err.code : 'internal';
        this.#metrics?.layerIndexDuration.observe({ outcome }, (performance.now() - started) / 1000);
        throw err;
      }
    });
    return leased.value;
  }

  /**
   * The parent to index against. A layer indexed again keeps the parent it was stored with, as in
   * Clair (a different ParentName in the new request is ignored), so the tree can never form a cycle.
   */
  async #parentOf(request: IndexRequest, existing: LayerRow | undefined): Promise<LayerRow | null> {
    const parentName = existing ? existing.parentName : request.parentName;
    if (!parentName) return null;
    const parent = await findLayer(this.#pool, parentName);
    // Clair's own words (worker.ErrParentUnknown): Quay's security worker matches this exact
    // message to re-post the whole chain from the base layer.
    if (!parent) throw badRequest(UNKNOWN_PARENT_MESSAGE);
    return parent;
  }

  /**
   * Downloads and reads a layer; what its own files hold. The whole of it, download and walk, for
   * local files as for URLs, ends by clair.indexer.downloadtimeout; signal (the requester went
   * away) ends it at once, with the download and any decompressor process.
   */
  async scan(request: LayerSource, signal?: AbortSignal): Promise<LayerScan> {
    const { downloadTimeoutMs } = this.#settings.fetch;
    const deadline = AbortSignal.timeout(downloadTimeoutMs);
    const stop = signal ? AbortSignal.any([signal, deadline]) : deadline;
    try {
      const stream = request.body
        ? readUpload(request.body, this.#settings.fetch, stop)
        : (await openLayer(request.path, request.headers, this.#settings.fetch, stop)).stream;
      const orTar = request.digestOf === 'blob-or-tar';
      const read = (bytes: Readable): Promise<LayerContents> =>
        readLayerArchive(bytes, request.format, wants, this.#settings.limits, {
          uncompressedDigest: orTar && request.digest !== undefined,
          fileListers: FILE_LISTERS,
        });
      const contents = request.digest
        ? await verifiedRead(stream, request.digest, read, orTar ? (c) => c.uncompressedDigest : undefined)
        : await read(stream);
      const scan = scanContents(contents, PACKAGE_LISTERS, NAMESPACE_DETECTORS, APPLICATION_LISTERS);
      const unreadable = scan.applications?.unreadable ?? [];
      // Never dropped unseen: the layer is indexed with the other manifests, and these are named.
      if (unreadable.length > 0)
        this.#log.warn(
          { location: redactLocation(request.path), manifests: unreadable.slice(0, 20), count: unreadable.length },
          'application manifests the listers could not read',
        );
      return scan;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (deadline.aborted) {
        throw unprocessable(
          `reading the layer took longer than clair.indexer.downloadtimeout (${downloadTimeoutMs / 1000} s); ` +
            `it may be too large, or be served too slowly`,
          err,
        );
      }
      throw err;
    }
  }
}

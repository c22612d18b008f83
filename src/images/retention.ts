import type { Logger } from 'pino';
import { purgeUntaggedImages } from '../store/images.js';
import { leaseOwner, withLease } from '../store/locks.js';
import { withTransaction, type Pool } from '../store/pool.js';

/** How often untagged images past their retention are looked for. */
const PURGE_INTERVAL_MS = 60 * 60_000;
const LEASE = 'images/retention';
const LEASE_TTL_MS = 5 * 60_000;
/** Digests purged per transaction. */
const PURGE_BATCH = 500;

/**
 * Deletes images no tag names any more (a tag moved to a new digest) once they were last seen
 * longer ago than clair.images.untaggedretention, with their contents when no other image holds
 * the digest. One replica at a time (a lease); 0 keeps them.
 */
export class ImageRetention {
  readonly #pool: Pool;
  readonly #retentionMs: number;
  readonly #log: Logger;
  readonly #owner = leaseOwner('image-retention');
  #timer: NodeJS.Timeout | undefined;

  constructor(deps: { pool: Pool; retentionMs: number; log: Logger }) {
    this.#pool = deps.pool;
    this.#retentionMs = deps.retentionMs;
    this.#log = deps.log.child({ component: 'image-retention' });
  }

  start(): void {
    if (this.#retentionMs === 0) return;
    void this.purge();
    this.#timer = setInterval(() => void this.purge(), PURGE_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** One pass; returns the image records deleted (0 when another replica holds the lease). */
  async purge(): Promise<number> {
    try {
      // Renewed while it runs: a purge of many batches may outlast one lease period.
      const terms = {
        owner: this.#owner,
        ttlMs: LEASE_TTL_MS,
        onRenewalFailure: (err: unknown) => this.#log.warn({ err }, 'image retention lease renewal failed'),
      };
      const leased = await withLease(this.#pool, LEASE, terms, async () => {
        const cutoff = new Date(Date.now() - this.#retentionMs);
        let deleted = 0;
        for (;;) {
          const batch = await withTransaction(this.#pool, (client) => purgeUntaggedImages(client, cutoff, PURGE_BATCH));
          deleted += batch.images;
          if (batch.digests < PURGE_BATCH) break;
        }
        if (deleted > 0) this.#log.info({ deleted, lastSeenBefore: cutoff.toISOString() }, 'untagged images purged');
        return deleted;
      });
      return leased.held ? leased.value : 0;
    } catch (err) {
      this.#log.warn({ err }, 'purging untagged images failed');
      return 0;
    }
  }
}

import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { VERSION_FORMATS } from './ecosystems/index.js';
import { MATCHING } from './ecosystems/matching.js';
import type { VersionFormat } from './model/version-format.js';
import { featuresOfNamespace, relinkFeatures, type RelinkCounts } from './store/features.js';
import { describeOwner, leaseHolder, leaseOwner, withLease } from './store/locks.js';
import { matchRevision, namespacesOfFormat, setMatchRevision } from './store/match-revisions.js';
import { withTransaction, type Pool } from './store/pool.js';

const LEASE = 'matches/recompute';
const LEASE_TTL_MS = 5 * 60_000;
/**
 * Features relinked per transaction. Each transaction holds its namespace exclusively (layers of
 * that namespace wait to be stored), so it stays short; a namespace of 30,000 features takes 30.
 */
const FEATURES_PER_TRANSACTION = 1_000;
/** How long to wait before trying again: for the lease another process holds, or after a failure. */
const WAIT_MS = 30_000;

export interface RematchResult extends RelinkCounts {
  readonly format: string;
  readonly revision: number;
  readonly namespaces: number;
}

/**
 * Keeps the stored matches in step with the version formats' comparators. Matches
 * (vulnerability_affects) are decided once, when a vulnerability or a package version is stored;
 * an updater's later run leaves an unchanged vulnerability's links alone. So when a release
 * changes how a format orders versions (its revision), the matches stored under the old order
 * would stay wrong. At start-up, for each format whose stored revision differs from the code's,
 * this computes the matches of every live vulnerability of the format's namespaces again, under a
 * lease (one replica does it; the others wait, then find it done), and records the revision. The
 * triggers on vulnerability_affects tell every replica's report cache and the image summaries
 * what changed. Superseded vulnerability versions keep the links they had: they are the record of
 * what was reported, for the Old side of notifications.
 *
 * It runs in the background: the API serves meanwhile, with the matches as they were until each
 * namespace is done. A failure is logged and tried again later; the revision is recorded only
 * once every namespace of the format is done, so a stop or a crash means a new start.
 */
export class Rematcher {
  readonly #pool: Pool;
  readonly #log: Logger;
  readonly #waitMs: number;
  readonly #owner = leaseOwner('rematch');
  #running: Promise<RematchResult[]> | undefined;
  readonly #stopping = new AbortController();

  constructor(deps: { pool: Pool; log: Logger; waitMs?: number }) {
    this.#pool = deps.pool;
    this.#log = deps.log.child({ component: 'rematch' });
    this.#waitMs = deps.waitMs ?? WAIT_MS;
  }

  start(): void {
    this.#running ??= this.#runUntilDone();
  }

  /** Ends the work between two transactions; what is not done is done at the next start. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#running;
  }

  /** Resolves with what the run started by start() did, once it is done or stopped. */
  async done(): Promise<RematchResult[]> {
    return (await this.#running) ?? [];
  }

  async #runUntilDone(): Promise<RematchResult[]> {
    while (!this.#stopping.signal.aborted) {
      try {
        return await this.run();
      } catch (err) {
        this.#log.error({ err }, 'recomputing matches failed; trying again later');
        await this.#pause(this.#waitMs);
      }
    }
    return [];
  }

  /**
   * Brings every format's matches up to its revision: waits for the lease while another process
   * holds it. Returns what was recomputed (nothing when every stored revision is current).
   */
  async run(): Promise<RematchResult[]> {
    if ((await this.#outdated()).length === 0) return [];
    const terms = {
      owner: this.#owner,
      ttlMs: LEASE_TTL_MS,
      onRenewalFailure: (err: unknown) => this.#log.warn({ err }, 'rematch lease renewal failed'),
    };
    const leased = await withLease(this.#pool, LEASE, terms, () => this.#recomputeOutdated());
    if (leased.held) return leased.value;
    const holder = await leaseHolder(this.#pool, LEASE);
    this.#log.info({ holder: holder && describeOwner(holder.owner) }, 'waiting for another process recomputing matches');
    const { signal } = this.#stopping;
    // No time limit: it waits until the holder is done, or this process stops.
    const wait = { pollMs: this.#waitMs, maxMs: Infinity, signal, tooLong: () => new Error('unreachable') };
    try {
      return (await withLease(this.#pool, LEASE, { ...terms, wait }, () => this.#recomputeOutdated())).value;
    } catch (err) {
      if (err === signal.reason) return [];
      throw err;
    }
  }

  /** Recomputes what is still outdated: another process may have done it while this one waited for the lease. */
  async #recomputeOutdated(): Promise<RematchResult[]> {
    const results: RematchResult[] = [];
    for (const format of await this.#outdated()) {
      const result = await this.#recompute(format);
      if (!result) break;
      results.push(result);
    }
    return results;
  }

  async #outdated(): Promise<VersionFormat[]> {
    const outdated: VersionFormat[] = [];
    for (const format of VERSION_FORMATS) {
      const stored = await matchRevision(this.#pool, format.name);
      if (stored === format.revision) continue;
      if (stored === undefined && (await namespacesOfFormat(this.#pool, format.name)).length === 0) {
        // A format new to this database: nothing was matched under an older order of it.
        await setMatchRevision(this.#pool, format.name, format.revision);
        continue;
      }
      outdated.push(format);
    }
    return outdated;
  }

  /** The format's matches computed again; undefined when stopped before the end. */
  async #recompute(format: VersionFormat): Promise<RematchResult | undefined> {
    const from = await matchRevision(this.#pool, format.name);
    const started = performance.now();
    const namespaces = await namespacesOfFormat(this.#pool, format.name);
    this.#log.info({ format: format.name, from, to: format.revision, namespaces: namespaces.length }, 'recomputing matches');
    const match = MATCHING.match(format.name);
    const total: RelinkCounts = { added: 0, removed: 0 };
    for (const namespace of namespaces) {
      const features = await featuresOfNamespace(this.#pool, namespace.id);
      for (let i = 0; i < features.length; i += FEATURES_PER_TRANSACTION) {
        if (this.#stopping.signal.aborted) return undefined;
        const batch = features.slice(i, i + FEATURES_PER_TRANSACTION);
        const counts = await withTransaction(this.#pool, (client) => relinkFeatures(client, namespace.id, batch, match));
        total.added += counts.added;
        total.removed += counts.removed;
      }
    }
    await setMatchRevision(this.#pool, format.name, format.revision);
    const result = { format: format.name, revision: format.revision, namespaces: namespaces.length, ...total };
    this.#log.info({ ...result, durationMs: Math.round(performance.now() - started) }, 'matches recomputed');
    return result;
  }

  /** Waits ms, or less when stopped. */
  async #pause(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.#stopping.signal }).catch(() => undefined);
  }
}

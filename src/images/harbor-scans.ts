import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { TarsierError } from '../errors.js';
import { dataProblems, imageData } from '../model/coverage.js';
import { formatImageReference, isTag } from '../registry/reference.js';
import {
  deleteHarborScansOlderThan,
  failLostHarborScan,
  findHarborScan,
  finishHarborScan,
  insertHarborScan,
  type HarborScanRow,
} from '../store/harbor-scans.js';
import { acquireLease, leaseOwner, liveLeaseOwners, ownerIsGone, releaseLease } from '../store/locks.js';
import { withTransaction, type Pool } from '../store/pool.js';
import { isRetryable, type ImageScanner } from './images.js';
import { imageContents, type ImageContents } from './report.js';

/**
 * The scans Harbor asks for through the Pluggable Scanner API, run by the durable queue
 * (src/images/queue.ts) as jobs keyed by the scan id, so a scan outlives the process that accepted
 * it: a stopped or killed process's scan runs again, after a restart or on another replica, and
 * Harbor sees it pending until then.
 *
 * Harbor's registry authorization is good for its pull only and is never stored: the process that
 * accepted the scan keeps it in memory, and the scan's job carries that process's name as a flag.
 * While the process lives (its lease in the lock table), the other processes' workers leave the
 * job to it (graphile-worker's forbiddenFlags). Once it has stopped, any process runs the scan,
 * without Harbor's authorization: with the registry's configured credentials (clair.registries),
 * or none; if the registry then refuses, the scan fails saying why, and Harbor scans again.
 */

/** The queue's task that runs Harbor scans. */
export const HARBOR_SCAN_TASK = 'harbor-scan';

/** What a Harbor scan's job carries: which scan, and whether Harbor's registry URL was http:. No credential. */
export interface HarborScanPayload {
  scan: string;
  insecure: boolean;
}

/** One artifact to pull and scan, as checked from Harbor's ScanRequest. */
export interface HarborScanTarget {
  /** host[:port], as image references write it. */
  registry: string;
  repository: string;
  digest: string;
  tag: string | null;
  mimeType: string | null;
  /** The registry speaks plain HTTP (Harbor's registry.url is http:). */
  insecure: boolean;
  /** Harbor's registry.authorization: memory only, never stored. */
  authorization: string | undefined;
}

/** A running job's attempt and the flags it was queued with. */
export interface HarborScanAttempt {
  attempt: number;
  maxAttempts: number;
  flags: readonly string[];
}

/**
 * The image reference the scan pulls: by digest, so a tag moved since the push changes nothing to
 * what is scanned; with the tag Harbor named, which is recorded only if the registry says it names
 * that digest when the scan ends (src/images/records.ts).
 */
export function referenceOf(artifact: { registry: string; repository: string; digest: string; tag: string | null }): string {
  const { registry, repository, digest, tag } = artifact;
  return formatImageReference({ registry, repository, digest, ...(tag !== null && isTag(tag) ? { tag } : {}) });
}

/** Scan ids are the UUIDs start() gives; anything else names no scan. */
const SCAN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a scan's report can say: not yet (the scan is queued or runs), or the contents of the image it scanned. */
export type HarborScanResult = { state: 'pending' } | { state: 'done'; scan: HarborScanRow; contents: ImageContents };

/** A scan whose last attempt was stopped with its process. */
export const INTERRUPTED_MESSAGE = 'the scan was interrupted (the Tarsier process running it stopped); scan again';
/** A pending scan no job can run any more. */
export const LOST_MESSAGE = 'the scan was lost (no queued job runs it any more); scan again';
/** Added to the failure of a scan run without the authorization Harbor gave to the process that stopped. */
const AUTHORIZATION_GONE =
  "resumed after the Tarsier process that accepted the scan stopped, without Harbor's registry authorization (kept in that " +
  "process's memory only) and so with the credentials of clair.registries, if any; scan again";

/** Names a holder's lease: `harbor-authorization/<holder>`. */
const HOLDER_LEASE_PREFIX = 'harbor-authorization/';
/** A killed holder's scans wait this long, at most, for another machine's replica (one of this machine takes them at once). */
const HOLDER_LEASE_TTL_MS = 30_000;
const HOLDER_LEASE_RENEW_MS = HOLDER_LEASE_TTL_MS / 3;

/** Scans are forgotten a week after they were asked for: Harbor reads each report once, right after the scan. */
const KEEP_SCANS_MS = 7 * 24 * 3600_000;
const CLEAN_UP_EVERY_MS = 3600_000;

export class HarborScans {
  readonly #pool: Pool;
  readonly #scanner: Pick<ImageScanner, 'scan'>;
  readonly #log: Logger;
  readonly #attempts: number;
  /** Names this process (and this instance) as the holder of the authorizations it was given. */
  readonly holder = leaseOwner('harbor-scan');
  /** Harbor's authorization per scan id, until the scan ends: memory only. */
  readonly #held = new Map<string, string>();
  #renewal: NodeJS.Timeout | undefined;
  #lastCleanUp = 0;

  constructor(deps: { pool: Pool; scanner: Pick<ImageScanner, 'scan'>; log: Logger; attempts: number }) {
    this.#pool = deps.pool;
    this.#scanner = deps.scanner;
    this.#log = deps.log.child({ component: 'harbor-scans' });
    this.#attempts = deps.attempts;
  }

  /** Records the scan as pending and queues it; resolves with its id once both are stored, not when it ends. */
  async start(target: HarborScanTarget): Promise<string> {
    const id = randomUUID();
    const { registry, repository, digest, tag, mimeType, insecure, authorization } = target;
    // Held before the job exists: this process's own worker may take it at once.
    if (authorization) this.#held.set(id, authorization);
    const payload: HarborScanPayload = { scan: id, insecure };
    try {
      await withTransaction(this.#pool, async (client) => {
        // The lease is committed with the job, so no process sees the job without seeing its holder alive.
        if (authorization) await acquireLease(client, this.#leaseName, this.holder, HOLDER_LEASE_TTL_MS);
        await insertHarborScan(
          client,
          { id, registry, repository, digest, tag, mimeType, owner: this.holder },
          { task: HARBOR_SCAN_TASK, payload: { ...payload }, maxAttempts: this.#attempts, flags: authorization ? [this.holder] : [] },
        );
      });
    } catch (err) {
      this.#held.delete(id);
      throw err;
    }
    // Kept for the life of the process once it has held an authorization (released by close()):
    // other replicas then know it as a holder before any of its later jobs shows up.
    if (authorization) this.#renewal ??= setInterval(() => this.#renewLease(), HOLDER_LEASE_RENEW_MS).unref();
    this.#cleanUpNowAndThen();
    return id;
  }

  /** The scan with this id, or undefined when there is none. A pending scan no job can run any more is marked failed first. */
  async #find(id: string): Promise<HarborScanRow | undefined> {
    const scan = await findHarborScan(this.#pool, id);
    if (scan?.state !== 'pending' || scan.queued) return scan;
    const failed = await failLostHarborScan(this.#pool, id, LOST_MESSAGE);
    if (failed) this.#log.warn({ scan: id }, 'harbor scan lost: no queued job runs it');
    return failed ?? (await findHarborScan(this.#pool, id));
  }

  /**
   * What the report of the scan with this id can say; undefined when there is no such scan. A scan
   * that failed, or whose image can no longer be reported, throws the reason Harbor shows (a 500:
   * Harbor then marks its scan failed and the user scans again). Harbor shows an empty report as "no
   * vulnerabilities": where a namespace of the image has no data, the report fails instead. Data of
   * any age is reported: Harbor shows the database's date from the scanner's metadata.
   */
  async result(id: string): Promise<HarborScanResult | undefined> {
    const scan = SCAN_ID.test(id) ? await this.#find(id.toLowerCase()) : undefined;
    if (!scan || scan.state === 'pending') return scan && { state: 'pending' };
    if (scan.state === 'failed') throw new TarsierError('internal', scan.error ?? 'the scan failed; scan again');
    const contents = await imageContents(this.#pool, scan.digest);
    if (!contents) throw new TarsierError('internal', `${referenceOf(scan)} is no longer recorded (deleted after the scan); scan again`);
    const data = imageData(contents.coverage, new Date(), 0);
    if (data.state === 'missing') {
      throw new TarsierError(
        'internal',
        `cannot tell whether the image is affected: ${dataProblems(data, 'any age').join('; ')}; scan again once the data is there`,
      );
    }
    return { state: 'done', scan, contents };
  }

  /** The holders of Harbor authorizations in other processes that are alive: their scans are theirs to run (the queue's forbiddenFlags). */
  async foreignHolders(): Promise<string[]> {
    const owners = await liveLeaseOwners(this.#pool, HOLDER_LEASE_PREFIX);
    return owners.filter((owner) => owner !== this.holder && !ownerIsGone(owner));
  }

  /**
   * Runs a queued scan (the queue's task) and records its outcome: done, or failed with the reason
   * Harbor shows. Throws to have the job run again later (here or elsewhere): when the registry or
   * the network may do better, or the process is stopping, while attempts are left.
   */
  async run(payload: HarborScanPayload, attempt: HarborScanAttempt, signal?: AbortSignal): Promise<'done' | 'failed' | 'ended'> {
    const scan = await findHarborScan(this.#pool, payload.scan);
    if (scan?.state !== 'pending') return 'ended';
    const authorization = this.#held.get(scan.id);
    const holder = attempt.flags[0];
    const elsewhere = authorization === undefined && holder !== undefined && holder !== this.holder;
    // Taken in the instant before this worker learnt of a new holder: it goes back, to run there.
    if (elsewhere && (await this.foreignHolders()).includes(holder)) {
      throw new TarsierError('unavailable', "another Tarsier process holds Harbor's registry authorization for this scan");
    }
    const reference = referenceOf(scan);
    let outcome: { state: 'done' } | { state: 'failed'; error: string };
    try {
      const images = await this.#scanner.scan({ reference, insecure: payload.insecure, authorization }, signal);
      // An index yields one image per platform, none named by its digest: Harbor sends each
      // platform's manifest as an artifact of its own, which is what the report can describe.
      outcome = images.some((image) => image.digest === scan.digest)
        ? { state: 'done' }
        : { state: 'failed', error: `${reference} is an image index, not an image manifest: scan each of its manifests` };
    } catch (err) {
      // A last attempt ends the scan whatever happened: a job left failed would keep it pending.
      if (attempt.attempt < attempt.maxAttempts && (signal?.aborted || isRetryable(err))) throw err;
      const reason = signal?.aborted ? INTERRUPTED_MESSAGE : (err as Error).message;
      outcome = { state: 'failed', error: elsewhere ? `${reason} (${AUTHORIZATION_GONE})` : reason };
      this.#log.warn({ scan: scan.id, reference, err: signal?.aborted ? undefined : err }, 'harbor scan failed');
    }
    await finishHarborScan(this.#pool, scan.id, outcome);
    this.#held.delete(scan.id);
    return outcome.state;
  }

  /** Stops renewing the holder's lease and releases it: this process's scans are anyone's to run now. */
  async close(): Promise<void> {
    clearInterval(this.#renewal);
    this.#renewal = undefined;
    await releaseLease(this.#pool, this.#leaseName, this.holder).catch((err: unknown) =>
      this.#log.warn({ err }, "could not release the harbor scans' holder lease"),
    );
  }

  get #leaseName(): string {
    return HOLDER_LEASE_PREFIX + this.holder;
  }

  /** Taken again rather than renewed: a lease the lapsed-lease clean-up deleted (a long database outage) comes back. */
  #renewLease(): void {
    acquireLease(this.#pool, this.#leaseName, this.holder, HOLDER_LEASE_TTL_MS).catch((err: unknown) =>
      this.#log.warn({ err }, "could not renew the harbor scans' holder lease"),
    );
  }

  #cleanUpNowAndThen(): void {
    if (Date.now() - this.#lastCleanUp < CLEAN_UP_EVERY_MS) return;
    this.#lastCleanUp = Date.now();
    deleteHarborScansOlderThan(this.#pool, KEEP_SCANS_MS).catch((err: unknown) =>
      this.#log.warn({ err }, 'could not delete old harbor scans'),
    );
  }
}

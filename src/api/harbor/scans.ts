import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ImageScanner } from '../../images/images.js';
import { formatImageReference, isTag } from '../../registry/reference.js';
import {
  deleteHarborScansOlderThan,
  failInterruptedHarborScan,
  findHarborScan,
  finishHarborScan,
  insertHarborScan,
  touchHarborScans,
  type HarborScanRow,
} from '../../store/harbor-scans.js';
import { leaseOwner, ownerIsGone } from '../../store/locks.js';
import type { Pool } from '../../store/pool.js';

/**
 * The scans Harbor asks for, run in the background of the process that accepted them. Harbor's
 * registry authorization is good for this one pull, so it is kept in memory only, for as long as
 * the scan runs: no other replica can take a scan over, and a scan whose process stopped is
 * reported failed ("scan again") instead of pending for ever.
 */

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

/**
 * The image reference the scan pulls: by digest, so a tag moved since the push changes nothing to
 * what is scanned; with the tag Harbor named, which is recorded only if the registry says it names
 * that digest when the scan ends (src/images/records.ts).
 */
export function referenceOf(artifact: { registry: string; repository: string; digest: string; tag: string | null }): string {
  const { registry, repository, digest, tag } = artifact;
  return formatImageReference({ registry, repository, digest, ...(tag !== null && isTag(tag) ? { tag } : {}) });
}

export interface HarborScanTimings {
  /** How often a process touches the scans it is running, so other replicas see it alive. */
  heartbeatMs: number;
  /** A pending scan untouched for this long has lost its process: several missed heartbeats. */
  staleAfterMs: number;
}

export const DEFAULT_HARBOR_SCAN_TIMINGS: HarborScanTimings = { heartbeatMs: 15_000, staleAfterMs: 60_000 };

export const INTERRUPTED_MESSAGE = 'the scan was interrupted (the Tarsier process running it stopped); scan again';

/** Scans are forgotten a week after they were asked for: Harbor reads each report once, right after the scan. */
const KEEP_SCANS_MS = 7 * 24 * 3600_000;
const CLEAN_UP_EVERY_MS = 3600_000;

export class HarborScans {
  readonly #pool: Pool;
  readonly #scanner: Pick<ImageScanner, 'scan'>;
  readonly #log: Logger;
  readonly #timings: HarborScanTimings;
  /** Names this process (and this instance) as the runner of its scans. */
  readonly #owner = leaseOwner('harbor-scan');
  readonly #running = new Map<string, { controller: AbortController; finished: Promise<void> }>();
  #heartbeat: NodeJS.Timeout | undefined;
  #lastCleanUp = 0;

  constructor(deps: { pool: Pool; scanner: Pick<ImageScanner, 'scan'>; log: Logger; timings?: HarborScanTimings }) {
    this.#pool = deps.pool;
    this.#scanner = deps.scanner;
    this.#log = deps.log.child({ component: 'harbor-scans' });
    this.#timings = deps.timings ?? DEFAULT_HARBOR_SCAN_TIMINGS;
  }

  /** Records the scan as pending and starts it; resolves with its id once recorded, not when it ends. */
  async start(target: HarborScanTarget): Promise<string> {
    const id = randomUUID();
    const { registry, repository, digest, tag, mimeType } = target;
    await insertHarborScan(this.#pool, { id, registry, repository, digest, tag, mimeType, owner: this.#owner });
    this.#launch(id, target);
    this.#cleanUpNowAndThen();
    return id;
  }

  /**
   * The scan with this id as Harbor should see it, or undefined when there is none. A pending scan
   * whose process is gone is marked failed first.
   */
  async find(id: string): Promise<HarborScanRow | undefined> {
    const { staleAfterMs } = this.#timings;
    const scan = await findHarborScan(this.#pool, id, staleAfterMs);
    if (scan?.state !== 'pending') return scan;
    // This instance knows for sure whether it still runs a scan of its own; another process of
    // this machine is judged by its PID; any other only by its heartbeat going quiet.
    const gone = scan.owner === this.#owner ? !this.#running.has(id) : ownerIsGone(scan.owner);
    if (!gone && !scan.stale) return scan;
    const failed = await failInterruptedHarborScan(this.#pool, id, { ownerIsGone: gone, staleAfterMs, error: INTERRUPTED_MESSAGE });
    if (failed) this.#log.warn({ scan: id, owner: scan.owner }, 'harbor scan interrupted: its process is gone');
    return failed ?? scan;
  }

  /** Stops the running scans (each is recorded as interrupted) and waits for them. */
  async close(): Promise<void> {
    const running = [...this.#running.values()];
    for (const { controller } of running) controller.abort(new Error(INTERRUPTED_MESSAGE));
    await Promise.all(running.map((r) => r.finished));
  }

  #launch(id: string, target: HarborScanTarget): void {
    const controller = new AbortController();
    const finished = this.#run(id, target, controller.signal).finally(() => {
      this.#running.delete(id);
      if (this.#running.size === 0) {
        clearInterval(this.#heartbeat);
        this.#heartbeat = undefined;
      }
    });
    this.#running.set(id, { controller, finished });
    this.#heartbeat ??= setInterval(() => this.#beat(), this.#timings.heartbeatMs).unref();
  }

  /** Never rejects: every outcome is recorded on the scan's row. */
  async #run(id: string, target: HarborScanTarget, signal: AbortSignal): Promise<void> {
    const reference = referenceOf(target);
    let outcome: { state: 'done' } | { state: 'failed'; error: string };
    try {
      const images = await this.#scanner.scan({ reference, insecure: target.insecure, authorization: target.authorization }, signal);
      // An index yields one image per platform, none named by its digest: Harbor sends each
      // platform's manifest as an artifact of its own, which is what the report can describe.
      outcome = images.some((image) => image.digest === target.digest)
        ? { state: 'done' }
        : { state: 'failed', error: `${reference} is an image index, not an image manifest: scan each of its manifests` };
    } catch (err) {
      outcome = { state: 'failed', error: signal.aborted ? INTERRUPTED_MESSAGE : (err as Error).message };
      this.#log.warn({ scan: id, reference, err: signal.aborted ? undefined : err }, 'harbor scan failed');
    }
    try {
      await finishHarborScan(this.#pool, id, outcome);
    } catch (err) {
      // Left pending: whoever reads it next sees it is not running here any more and fails it.
      this.#log.error({ scan: id, err }, 'could not record the outcome of a harbor scan');
    }
  }

  #beat(): void {
    touchHarborScans(this.#pool, [...this.#running.keys()]).catch((err: unknown) =>
      this.#log.warn({ err }, 'could not mark the running harbor scans alive'),
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

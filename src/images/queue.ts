import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Logger as WorkerLogger,
  makeWorkerUtils,
  run,
  runMigrations,
  type Runner,
  type Task,
  type WorkerEvents,
  type WorkerUtils,
} from 'graphile-worker';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import { jobDepth, lockedJobWorkers } from '../store/image-jobs.js';
import { acquireLease, forgetLeases, leaseOwner, ownerIsGone, releaseLease, renewLease } from '../store/locks.js';
import type { Pool } from '../store/pool.js';
import { HARBOR_SCAN_TASK, type HarborScanPayload, type HarborScans } from './harbor-scans.js';
import { isRetryable, type CheckedImageRequest, type ImageScanner, type ImageScanRequest } from './images.js';

/**
 * The durable queue of image scans (registry webhooks, `POST /tarsier/v1/images?wait=false`, and
 * Harbor's scans, src/images/harbor-scans.ts): graphile-worker's jobs in PostgreSQL, so a scan
 * outlives a restart, runs on one replica (`FOR UPDATE SKIP LOCKED`), starts at once
 * (LISTEN/NOTIFY) and is retried with exponential backoff when the registry or the network failed.
 * A scan the request itself dooms (a missing manifest, refused credentials) is not retried, and a
 * scan whose attempts are used up ends there: no job is left failed in the table. Jobs carry no
 * credentials: queued scans use the configured ones (`clair.registries`), Harbor's scans the
 * authorization their process holds in memory.
 *
 * graphile-worker keeps the jobs of a worker that died (a killed process) locked for four hours.
 * Each worker of ours therefore holds a lease in the lock table while it runs, and every replica
 * unlocks the jobs of workers whose lease lapsed or whose process has ended, so another worker
 * picks them up within seconds.
 *
 * A graphile-worker worker that cannot record how its job ended (the database went away in the
 * middle of the job: a restart, a failover) stops for good, its job still locked, and its pool
 * never replaces it: once every worker has met that fate the queue stands still. Whenever a worker
 * stops on an error, the workers are therefore started again, as a new runner, retrying with
 * backoff until the database answers; the stopped workers' jobs are unlocked at once.
 */

export const SCAN_IMAGE_TASK = 'scan-image';
/** The tasks of this queue. */
const TASKS = [SCAN_IMAGE_TASK, HARBOR_SCAN_TASK];

/** A queued scan: the request without credentials, and where it came from. */
export interface QueuedScan {
  reference: string;
  platform?: string | undefined;
  insecure?: boolean | undefined;
  /** api, distribution (Docker Distribution webhook), harbor (Harbor webhook). */
  source: string;
}

const WORKER_LEASE_TTL_MS = 30_000;
const WORKER_LEASE_RENEW_MS = WORKER_LEASE_TTL_MS / 3;
/** How often lost jobs are looked for. */
const SWEEP_INTERVAL_MS = 10_000;
/** A job locked this recently by a worker with no lease row may belong to a worker still registering it. */
const UNREGISTERED_GRACE_SECONDS = 60;
/** How often a worker that found no job asks again (jobs that come due after a backoff); new jobs wake it at once. */
const POLL_INTERVAL_MS = 1_000;
const WORKER_LEASE_PREFIX = 'image-worker/';
/** Delays between attempts to start the workers again while the database is away: doubling from the first up to the last. */
const RESTART_FIRST_DELAY_MS = 250;
const RESTART_MAX_DELAY_MS = 5_000;

/** Creates or updates graphile-worker's schema (part of `tarsier migrate`). */
export async function migrateQueue(pool: Pool, log: Logger): Promise<void> {
  await runMigrations({ pgPool: pool, logger: workerLogger(log) });
}

export class ImageQueue {
  readonly #pool: Pool;
  readonly #scanner: ImageScanner;
  readonly #harbor: HarborScans;
  readonly #log: Logger;
  readonly #metrics: Metrics | undefined;
  readonly #concurrency: number;
  readonly #attempts: number;
  readonly #owner = leaseOwner('image-queue');
  readonly #workers = new Set<string>();
  #utils: Promise<WorkerUtils> | undefined;
  #runner: Runner | undefined;
  /** The runner whose workers' deaths count: a runner being replaced or stopped is no longer current. */
  #current: object | undefined;
  #restarting: Promise<void> | undefined;
  #stopped = new AbortController();
  #timers: NodeJS.Timeout[] = [];

  constructor(deps: {
    pool: Pool;
    scanner: ImageScanner;
    harbor: HarborScans;
    log: Logger;
    metrics?: Metrics;
    concurrency: number;
    attempts: number;
  }) {
    this.#pool = deps.pool;
    this.#scanner = deps.scanner;
    this.#harbor = deps.harbor;
    this.#log = deps.log.child({ component: 'image-queue' });
    this.#metrics = deps.metrics;
    this.#concurrency = deps.concurrency;
    this.#attempts = deps.attempts;
  }

  /** Starts the workers (and the sweep for jobs of dead workers). */
  async start(): Promise<void> {
    this.#stopped = new AbortController();
    await this.#sweep();
    this.#runner = await this.#run();
    const renew = setInterval(() => void this.#renewLeases(), WORKER_LEASE_RENEW_MS);
    const sweep = setInterval(() => void this.#sweep(), SWEEP_INTERVAL_MS);
    this.#timers = [renew, sweep];
    for (const timer of this.#timers) timer.unref();
  }

  /** Checks a scan before it is queued (ImageScanner.check): a 400 naming what is wrong. */
  check(scan: QueuedScan): CheckedImageRequest {
    return this.#scanner.check({ reference: scan.reference, platform: scan.platform, insecure: scan.insecure });
  }

  /**
   * Queues a scan (checked first); returns the job id. The same reference and platform queued again
   * while waiting is one job. A reference pinned to a digest joins its job while it runs too (20
   * deliveries of one push are one scan): what such a scan pulls cannot change, and the tag is
   * asked of the registry when the scan records (src/images/records.ts), so a request arriving
   * before then adds nothing. A reference by tag alone starts another scan once the first has
   * begun, since the tag may have moved since it was read.
   */
  async enqueue(scan: QueuedScan): Promise<string> {
    const { reference } = this.check(scan);
    const job = await (
      await this.#workerUtils()
    ).addJob(SCAN_IMAGE_TASK, scan, {
      jobKey: `${scan.reference}|${scan.platform ?? ''}`,
      jobKeyMode: reference.digest !== undefined ? 'unsafe_dedupe' : 'replace',
      maxAttempts: this.#attempts,
    });
    this.#log.info({ job: job.id, reference: scan.reference, source: scan.source }, 'image scan queued');
    return job.id;
  }

  /** Scans waiting (ready or backing off) and running, for the queue depth metric. */
  async depth(): Promise<{ waiting: number; running: number }> {
    return jobDepth(this.#pool, TASKS);
  }

  /** Stops taking jobs; a scan under way is aborted and its job released to run again (here after a restart, or elsewhere). */
  async stop(): Promise<void> {
    this.#stopped.abort();
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    await this.#restarting;
    this.#current = undefined;
    const runner = this.#runner;
    this.#runner = undefined;
    await runner?.stop();
    const utils = this.#utils;
    this.#utils = undefined;
    await (await utils)?.release();
  }

  /** One set of worker utils, made on first use (concurrent first uses share it); made again after a failed attempt (the database was away). */
  #workerUtils(): Promise<WorkerUtils> {
    if (this.#utils) return this.#utils;
    const utils = makeWorkerUtils({ pgPool: this.#pool, logger: workerLogger(this.#log) });
    this.#utils = utils;
    utils.catch(() => {
      if (this.#utils === utils) this.#utils = undefined;
    });
    return utils;
  }

  /** Starts a runner of this.#concurrency workers; one of them stopping on an error starts the workers again. */
  async #run(): Promise<Runner> {
    const current = {};
    this.#current = current;
    // Subscribed before run(): it creates its workers (and says so) before it returns.
    const events = new EventEmitter() as WorkerEvents;
    events.on('worker:create', ({ worker }) => void this.#register(worker.workerId));
    events.on('worker:stop', ({ worker, error }) => {
      this.#workers.delete(worker.workerId);
      // A worker that stopped on an error may still hold its job: its lease, ours, stays, so that
      // the sweep after the restart knows the job is ours and unlocks it at once.
      if (error === undefined) {
        void releaseLease(this.#pool, WORKER_LEASE_PREFIX + worker.workerId, this.#owner).catch(() => undefined);
      } else if (this.#current === current) this.#restart(error);
    });
    const runner = await run({
      pgPool: this.#pool,
      logger: workerLogger(this.#log),
      events,
      concurrency: this.#concurrency,
      noHandleSignals: true,
      pollInterval: POLL_INTERVAL_MS,
      // Harbor scans whose authorization another live process holds are left to it.
      forbiddenFlags: () => this.#harbor.foreignHolders(),
      taskList: { [SCAN_IMAGE_TASK]: this.#task, [HARBOR_SCAN_TASK]: this.#harborTask },
    });
    runner.promise.catch((err: unknown) => {
      if (this.#current === current) this.#restart(err);
    });
    return runner;
  }

  /**
   * Replaces the current runner, one of whose workers stopped on an error: stops it (its other
   * workers finish or abort their scans), then starts a new one, again and again with backoff
   * while the database is away, and unlocks the stopped workers' jobs once it runs.
   */
  #restart(cause: unknown): void {
    if (this.#restarting || this.#stopped.signal.aborted) return;
    this.#log.warn({ err: cause }, 'an image worker stopped on an error; restarting the image workers');
    this.#current = undefined;
    const failed = this.#runner;
    this.#runner = undefined;
    const { signal } = this.#stopped;
    this.#restarting = (async () => {
      await failed?.stop().catch((err: unknown) => this.#log.warn({ err }, 'stopping the failed image workers failed'));
      for (let attempt = 1; !signal.aborted; attempt++) {
        try {
          this.#runner = await this.#run();
          this.#log.info({ attempts: attempt }, 'image queue workers restarted');
          return;
        } catch (err) {
          const delayMs = Math.min(RESTART_MAX_DELAY_MS, RESTART_FIRST_DELAY_MS * 2 ** (attempt - 1));
          this.#log.warn({ err, attempt, delayMs }, 'image queue workers could not start; trying again');
          await sleep(delayMs, undefined, { signal }).catch(() => undefined);
        }
      }
    })().finally(() => (this.#restarting = undefined));
    // Once the new runner runs (and a worker of it may stop and restart them again), not before.
    void this.#restarting.then(() => (signal.aborted ? undefined : this.#sweep()));
  }

  readonly #task: Task = async (payload, helpers) => {
    const scan = payload as QueuedScan;
    const request: ImageScanRequest = { reference: scan.reference, platform: scan.platform, insecure: scan.insecure };
    const { attempts, max_attempts: maxAttempts, id } = helpers.job;
    try {
      await this.#scanner.scan(request, helpers.abortSignal);
      this.#metrics?.imageJobs.inc({ outcome: 'done' });
    } catch (err) {
      const context = { job: id, reference: scan.reference, attempt: attempts, err };
      const retryable = isRetryable(err);
      if (!retryable || attempts >= maxAttempts) {
        // Running it again cannot help, or may not: the job ends here, its reason in the log and
        // the metric. (A job left failed would keep its key, and later pushes would join it.)
        this.#metrics?.imageJobs.inc({ outcome: 'given_up' });
        this.#log.warn(context, retryable ? 'image scan failed; attempts used up' : 'image scan failed; not retried');
        return;
      }
      this.#metrics?.imageJobs.inc({ outcome: 'retry' });
      this.#log.warn(context, 'image scan failed; will retry');
      throw err;
    }
  };

  readonly #harborTask: Task = async (payload, helpers) => {
    const scan = payload as HarborScanPayload;
    const { attempts, max_attempts: maxAttempts, id, flags } = helpers.job;
    try {
      const attempt = { attempt: attempts, maxAttempts, flags: Object.keys(flags ?? {}) };
      const outcome = await this.#harbor.run(scan, attempt, helpers.abortSignal);
      this.#metrics?.imageJobs.inc({ outcome: outcome === 'failed' ? 'given_up' : 'done' });
    } catch (err) {
      this.#metrics?.imageJobs.inc({ outcome: 'retry' });
      this.#log.warn({ job: id, scan: scan.scan, attempt: attempts, err }, 'harbor scan failed; will retry');
      throw err;
    }
  };

  async #register(workerId: string): Promise<void> {
    this.#workers.add(workerId);
    await acquireLease(this.#pool, WORKER_LEASE_PREFIX + workerId, this.#owner, WORKER_LEASE_TTL_MS).catch((err: unknown) =>
      this.#log.warn({ err }, 'could not register an image worker'),
    );
  }

  async #renewLeases(): Promise<void> {
    for (const id of this.#workers) {
      await renewLease(this.#pool, WORKER_LEASE_PREFIX + id, this.#owner, WORKER_LEASE_TTL_MS).catch((err: unknown) =>
        this.#log.warn({ err }, 'image worker lease renewal failed'),
      );
    }
  }

  /**
   * Unlocks the jobs of workers that are gone: lease lapsed, process ended, never registered, or
   * one of ours that stopped on an error without releasing its job.
   */
  async #sweep(): Promise<void> {
    try {
      const workers = await lockedJobWorkers(this.#pool, TASKS, WORKER_LEASE_PREFIX, UNREGISTERED_GRACE_SECONDS);
      const dead = workers
        .filter((w) => !this.#workers.has(w.workerId))
        .filter((w) => w.owner === this.#owner || (w.owner === null ? w.old : w.lapsed || ownerIsGone(w.owner)))
        .map((w) => w.workerId);
      if (dead.length === 0) return;
      await (await this.#workerUtils()).forceUnlockWorkers(dead);
      await forgetLeases(
        this.#pool,
        dead.map((w) => WORKER_LEASE_PREFIX + w),
      );
      this.#log.warn({ workers: dead }, 'released the image scans of workers that stopped without finishing them');
    } catch (err) {
      this.#log.warn({ err }, 'looking for image scans of stopped workers failed');
    }
  }
}

/** graphile-worker's log lines through ours (its debug chatter at debug). */
function workerLogger(log: Logger): WorkerLogger {
  return new WorkerLogger(() => (level, message, meta) => {
    const fields = { component: 'graphile-worker', ...(meta as object | undefined) };
    if (level === 'error') log.error(fields, message);
    else if (level === 'warning') log.warn(fields, message);
    else if (level === 'info') log.info(fields, message);
    else log.debug(fields, message);
  });
}

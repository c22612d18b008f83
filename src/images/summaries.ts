import type pg from 'pg';
import type { Logger } from 'pino';
import { ChannelListener } from '../store/listener.js';
import { withTransaction, type Pool } from '../store/pool.js';
import { markQueuedChange, refreshStaleSummaries } from '../store/summaries.js';
import { SinglePass } from '../single-pass.js';

/** Written when a change is queued (migration 0024) and when a batch of summaries is marked stale. */
const CHANNEL = 'tarsier_summaries';
/** Summaries computed per transaction: short row locks, and a large backlog (a KEV change stales them all) drains in steps. */
const BATCH = 100;
/**
 * Ancestries a queued change is marked through per transaction: marking is a row lock and a flag
 * per summary, so a larger batch than the computation's keeps each transaction short while a change
 * on a base package of 100,000 images takes 100 of them.
 */
const MARK_BATCH = 1_000;
/** Looked for anyway this often, in case a wake-up was missed while not listening. */
const POLL_MS = 30_000;
const RETRY_MS = 1_000;

/**
 * Keeps image summaries (the counts and risk rank the dashboard sorts by) fresh: woken by the
 * triggers' NOTIFY, it first applies the queued changes (marks the summaries they touch stale, in
 * batches), then computes stale summaries in batches until none is left. Every replica runs one;
 * SKIP LOCKED on the queue and on the summaries shares the work without coordination, and a change
 * whose marking was cut short (a crash, a stop) resumes from its cursor on the next pass of any
 * replica.
 */
export class SummaryRefresher {
  readonly #pool: Pool;
  readonly #log: Logger;
  readonly #listener: ChannelListener;
  readonly #pass = new SinglePass(() => this.#drain());
  #timer: NodeJS.Timeout | undefined;

  constructor(deps: { pool: Pool; connection: pg.ClientConfig; log: Logger }) {
    this.#pool = deps.pool;
    this.#log = deps.log.child({ component: 'image-summaries' });
    this.#listener = new ChannelListener({
      connection: deps.connection,
      channel: CHANNEL,
      log: this.#log,
      retryMs: RETRY_MS,
      onNotification: () => this.wake(),
      onListening: () => this.wake(),
    });
  }

  async start(): Promise<void> {
    await this.#listener.start();
    this.#timer = setInterval(() => this.wake(), POLL_MS);
    this.#timer.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    const passEnded = this.#pass.stop(); // first: a notification heard while the listener stops starts no pass
    clearInterval(this.#timer);
    await this.#listener.stop();
    await passEnded;
  }

  /** Computes stale summaries now (or once more after the pass under way). */
  wake(): void {
    this.#pass.wake();
  }

  /** Resolves once no pass is under way (tests wait on it after a change). */
  async idle(): Promise<void> {
    await this.#pass.idle();
  }

  async #drain(): Promise<void> {
    try {
      let marked = 0;
      for (;;) {
        const done = await withTransaction(this.#pool, (client) => markQueuedChange(client, MARK_BATCH));
        if (done === undefined || this.#pass.stopped) break;
        marked += done;
      }
      if (marked > 0) this.#log.debug({ summaries: marked }, 'image summaries marked stale');
      let total = 0;
      for (;;) {
        const done = await withTransaction(this.#pool, (client) => refreshStaleSummaries(client, BATCH));
        total += done;
        if (done < BATCH || this.#pass.stopped) break;
      }
      if (total > 0) this.#log.debug({ summaries: total }, 'image summaries computed');
    } catch (err) {
      this.#log.warn({ err }, 'computing image summaries failed');
    }
  }
}

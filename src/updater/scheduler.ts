import type { Logger } from 'pino';
import type { Pool } from '../store/pool.js';
import { updaterStates } from '../store/updater-state.js';
import type { UpdaterRunner } from './runner.js';
import type { Source } from '../model/updater.js';

/** How often a replica looks for due sources. Runs themselves are every updater.interval. */
const DEFAULT_TICK_MS = 30_000;

/**
 * Runs each enabled source when it is due (never run, or its next run time has passed), one at a
 * time. Every replica ticks; the due time lives in the database and each run holds a lease, so a
 * scheduled run happens once across replicas. A failed source is retried with backoff (the runner
 * sets its next run time) without holding up the others.
 */
export class UpdaterScheduler {
  readonly #runner: UpdaterRunner;
  readonly #pool: Pool;
  readonly #sources: readonly Source[];
  readonly #log: Logger;
  readonly #tickMs: number;
  #timer: NodeJS.Timeout | undefined;
  #current: Promise<void> | undefined;
  #stopped = false;

  constructor(deps: { runner: UpdaterRunner; pool: Pool; sources: readonly Source[]; log: Logger; tickMs?: number }) {
    this.#runner = deps.runner;
    this.#pool = deps.pool;
    this.#sources = deps.sources;
    this.#log = deps.log.child({ component: 'updater-scheduler' });
    this.#tickMs = deps.tickMs ?? DEFAULT_TICK_MS;
  }

  start(): void {
    if (this.#sources.length === 0) return;
    // A short random delay, so replicas started together do not all look at once.
    this.#schedule(Math.min(this.#tickMs, 1000) * (0.5 + Math.random()));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#current;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#current = this.#tick().finally(() => this.#schedule(this.#tickMs * (0.9 + Math.random() * 0.2)));
    }, delayMs);
  }

  async #tick(): Promise<void> {
    try {
      const states = new Map((await updaterStates(this.#pool)).map((s) => [s.name, s]));
      for (const source of this.#sources) {
        if (this.#stopped) return;
        const next = states.get(source.name)?.nextRunAt;
        if (next && next.getTime() > Date.now()) continue;
        await this.#runner.run(source, { onlyIfDue: true });
      }
    } catch (err) {
      this.#log.warn({ err }, 'updater tick failed');
    }
  }
}

/**
 * A pass of work run when woken, one at a time: a wake-up while a pass runs makes one more pass
 * follow it (what woke it may have been committed too late for the pass under way to see), however
 * many wake-ups came. The notifier and the image summary refresher are driven this way, by
 * PostgreSQL NOTIFY and a poll.
 */
export class SinglePass {
  readonly #pass: () => Promise<void>;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  /** pass must not reject: it handles (and logs) its own failures. */
  constructor(pass: () => Promise<void>) {
    this.#pass = pass;
  }

  /** Stopping: no new pass starts, and a pass under way should end at its next step. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Runs a pass now, or once more after the pass under way. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#pass().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.wake();
      }
    });
  }

  /** Resolves once no pass is under way. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Starts no pass any more; resolves once the one under way has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }
}

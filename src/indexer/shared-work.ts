/**
 * Work shared by everyone who asks for the same key at once — one download of a layer, however
 * many requests want it — and cancelled when all of them have gone away (their signals aborted).
 * A caller that goes away is released at once with its own signal's reason; the work goes on for
 * the others.
 */
export class SharedWork<T> {
  readonly #running = new Map<string, { promise: Promise<T>; controller: AbortController; waiters: number }>();

  /** Whether work for key is under way (a caller of run would join it). */
  has(key: string): boolean {
    const entry = this.#running.get(key);
    return entry !== undefined && !entry.controller.signal.aborted;
  }

  run(key: string, signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    signal?.throwIfAborted();
    let entry = this.#running.get(key);
    // Work whose callers all left is ending: later callers start afresh.
    if (!entry || entry.controller.signal.aborted) {
      const controller = new AbortController();
      const started = { controller, waiters: 0, promise: work(controller.signal) };
      started.promise.then(
        () => this.#finish(key, started),
        () => this.#finish(key, started),
      );
      this.#running.set(key, started);
      entry = started;
    }
    const current = entry;
    current.waiters++;
    if (!signal) return current.promise;
    return new Promise<T>((resolve, reject) => {
      const leave = (): void => {
        if (--current.waiters === 0) current.controller.abort(signal.reason);
        reject(signal.reason);
      };
      signal.addEventListener('abort', leave, { once: true });
      current.promise.then(
        (value) => {
          signal.removeEventListener('abort', leave);
          resolve(value);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', leave);
          reject(err);
        },
      );
    });
  }

  #finish(key: string, entry: { promise: Promise<T> }): void {
    if (this.#running.get(key) === entry) this.#running.delete(key);
  }
}

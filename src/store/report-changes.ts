import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import { ChannelListener } from './listener.js';
import type { Pool } from './pool.js';

/** Written by the triggers of migration 0003 at every commit that changes what a layer report shows. */
const CHANNEL = 'tarsier_report_changes';
/** A marker this replica sends itself: everything committed before it has been heard once it arrives. */
const SYNC_PREFIX = 's:';
const RETRY_MS = 1_000;

/** features, layers: these ids; risk: EPSS or KEV data (shown beside every vulnerability), no ids. */
export type ReportChangeKind = 'features' | 'layers' | 'risk';
const KINDS: Record<string, ReportChangeKind> = { f: 'features', l: 'layers', e: 'risk' };

export interface ReportChangeEvents {
  /** The matches of these feature versions, or these layers, or the risk context of any vulnerability changed. */
  changed(kind: ReportChangeKind, ids: readonly number[]): void;
  /** Changes are heard from now on; those committed before may have been missed (forget them all). */
  listening(): void;
  /** Changes are not heard until listening() again. */
  lost(): void;
}

/**
 * The committed changes that make cached layer reports stale, as every replica hears them from
 * PostgreSQL (LISTEN), whoever made them.
 */
export class ReportChanges {
  readonly #pool: Pool;
  readonly #events: ReportChangeEvents;
  readonly #log: Logger;
  readonly #listener: ChannelListener;
  readonly #syncs = new Map<string, () => void>();

  constructor(deps: { pool: Pool; connection: pg.ClientConfig; log: Logger; events: ReportChangeEvents }) {
    this.#pool = deps.pool;
    this.#events = deps.events;
    this.#log = deps.log;
    this.#listener = new ChannelListener({
      connection: deps.connection,
      channel: CHANNEL,
      log: deps.log,
      retryMs: RETRY_MS,
      onNotification: (payload) => this.#heard(payload),
      onListening: () => deps.events.listening(),
      onLost: () => {
        deps.events.lost();
        this.#releaseSyncs();
      },
    });
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  async stop(): Promise<void> {
    await this.#listener.stop();
    this.#releaseSyncs();
  }

  /**
   * Resolves once every change committed before the call has been heard (notifications arrive in
   * commit order), or after timeoutMs, when what was missed is treated as lost. A replica calls it
   * after its own writes, so its next report shows them.
   */
  async caughtUp(timeoutMs: number): Promise<void> {
    if (!this.#listener.listening) return;
    const token = randomUUID();
    const heard = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.#syncs.delete(token);
        resolve(false);
      }, timeoutMs);
      this.#syncs.set(token, () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    try {
      await this.#pool.query('SELECT pg_notify($1, $2)', [CHANNEL, SYNC_PREFIX + token]);
    } catch (err) {
      this.#syncs.get(token)?.();
      this.#log.warn({ err }, 'could not confirm that report changes were heard; dropping cached reports');
      this.#forgetAll();
      return;
    }
    if (!(await heard)) {
      this.#log.warn({ timeoutMs }, 'report changes not heard in time; dropping cached reports');
      this.#forgetAll();
    }
  }

  #heard(payload: string): void {
    if (payload.startsWith(SYNC_PREFIX)) {
      const token = payload.slice(SYNC_PREFIX.length);
      this.#syncs.get(token)?.();
      this.#syncs.delete(token);
      return;
    }
    const separator = payload.indexOf(':');
    const kind = KINDS[payload.slice(0, separator)];
    if (separator < 0 || !kind) return;
    const ids = payload
      .slice(separator + 1)
      .split(',')
      .map(Number)
      .filter((id) => Number.isInteger(id));
    this.#events.changed(kind, ids);
  }

  /** What was heard is in doubt: start again from what is committed now. */
  #forgetAll(): void {
    if (this.#listener.listening) this.#events.listening();
  }

  #releaseSyncs(): void {
    for (const release of this.#syncs.values()) release();
    this.#syncs.clear();
  }
}

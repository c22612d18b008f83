import { createHmac } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import type { Metrics } from '../metrics.js';
import { outboundDispatcher } from '../outbound/dispatcher.js';
import { acquireLease, leaseOwner, releaseLease } from '../store/locks.js';
import {
  claimNotification,
  purgeNotifications,
  recordDelivered,
  recordDeliveryFailed,
  type ClaimedNotification,
} from '../store/notifications.js';
import type { Pool } from '../store/pool.js';
import { ChannelListener } from '../store/listener.js';
import { NOTIFY_CHANNEL } from '../store/notifications.js';
import { SinglePass } from '../single-pass.js';
import { USER_AGENT } from '../version.js';

/**
 * Webhook delivery. Each notification is POSTed as {"Notification":{"Name":"…"}} to every
 * endpoint; a round succeeds when all answer 2xx (5 s each). Failed tries back off exponentially
 * from 1 s for `attempts` tries, then continue every min(renotifyinterval, 15 min) until the
 * receiver recovers; a delivered notification is sent again every renotifyinterval until a client
 * marks it read. Every replica runs a notifier: a notification is claimed (with a lease) by one
 * replica at a time. Woken by PostgreSQL NOTIFY when one is written, and by a poll.
 */
export interface NotifierSettings {
  readonly endpoints: readonly string[];
  readonly attempts: number;
  readonly renotifyIntervalMs: number;
  readonly secret: string;
  readonly retentionMs: number;
}

/** TLS material for the endpoints (notifier.http.*), read from disk by the server. */
export interface NotifierTls {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly serverName?: string;
  readonly proxy?: string;
}

const DELIVERY_TIMEOUT_MS = 5_000;
/** How long a claimed notification is this replica's: longer than one try at every endpoint. */
const CLAIM_LEASE_MS = 60_000;
const MAX_BACKOFF_MS = 15 * 60_000;
const POLL_MS = 5_000;
const PURGE_EVERY_MS = 3600_000;
const WORKERS = 4;

/** When to try again after the n-th consecutive failure. */
export function retryDelay(failures: number, settings: Pick<NotifierSettings, 'attempts' | 'renotifyIntervalMs'>): number {
  if (failures < settings.attempts) return Math.min(1000 * 2 ** (failures - 1), MAX_BACKOFF_MS);
  return Math.min(settings.renotifyIntervalMs, MAX_BACKOFF_MS);
}

export class Notifier {
  readonly #pool: Pool;
  readonly #settings: NotifierSettings;
  readonly #log: Logger;
  readonly #metrics: Metrics | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #owner = leaseOwner('notifier');
  /** Wakes the notifier when a notification is written; the poll covers the gaps while it reconnects. */
  readonly #listener: ChannelListener;
  readonly #pass = new SinglePass(() => this.#deliverDue());
  #timers: NodeJS.Timeout[] = [];
  readonly #retries = new Set<NodeJS.Timeout>();

  constructor(deps: {
    pool: Pool;
    /** For the LISTEN connection (a pooled client cannot keep listening). */
    connection: pg.ClientConfig;
    settings: NotifierSettings;
    log: Logger;
    metrics?: Metrics;
    tls?: NotifierTls;
  }) {
    this.#pool = deps.pool;
    this.#settings = deps.settings;
    this.#log = deps.log.child({ component: 'notifier' });
    this.#listener = new ChannelListener({
      connection: deps.connection,
      channel: NOTIFY_CHANNEL,
      log: this.#log,
      retryMs: POLL_MS,
      onNotification: () => this.wake(),
    });
    this.#metrics = deps.metrics;
    const { proxy, ...tls } = deps.tls ?? {};
    this.#dispatcher = outboundDispatcher({
      connectTimeoutMs: DELIVERY_TIMEOUT_MS,
      tls,
      // Through a proxy each delivery's own deadline (DELIVERY_TIMEOUT_MS) bounds the answer.
      ...(proxy ? { proxy } : { headersTimeoutMs: DELIVERY_TIMEOUT_MS, bodyTimeoutMs: DELIVERY_TIMEOUT_MS }),
    });
  }

  get enabled(): boolean {
    return this.#settings.endpoints.length > 0;
  }

  async start(): Promise<void> {
    this.#timers.push(setInterval(() => void this.#purge(), PURGE_EVERY_MS));
    if (!this.enabled) return;
    await this.#listener.start();
    this.#timers.push(setInterval(() => this.wake(), POLL_MS));
    this.wake();
  }

  async stop(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    for (const t of this.#retries) clearTimeout(t);
    await this.#pass.stop();
    await this.#listener.stop();
    await this.#dispatcher.close();
  }

  /** Delivers whatever is due now; a wake-up during a pass makes another pass follow. */
  wake(): void {
    if (this.enabled) this.#pass.wake();
  }

  /** A retry is due before the next poll: wake then (another replica may take it; that is fine). */
  #wakeIn(ms: number): void {
    if (ms >= POLL_MS || this.#pass.stopped) return;
    this.#later(ms + 10, () => this.wake());
  }

  /** Runs fn after ms unless the notifier stops first. */
  #later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.#retries.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.#retries.add(timer);
  }

  async #deliverDue(): Promise<void> {
    await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        for (;;) {
          if (this.#pass.stopped) return;
          let claimed: ClaimedNotification | undefined;
          try {
            claimed = await claimNotification(this.#pool, CLAIM_LEASE_MS);
          } catch (err) {
            this.#log.warn({ err }, 'claiming a notification failed');
            return;
          }
          if (!claimed) return;
          await this.#deliver(claimed);
        }
      }),
    );
  }

  async #deliver(notification: ClaimedNotification): Promise<void> {
    const body = JSON.stringify({ Notification: { Name: notification.name } });
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': USER_AGENT };
    if (this.#settings.secret) {
      headers['x-tarsier-signature'] = `sha256=${createHmac('sha256', this.#settings.secret).update(body).digest('hex')}`;
    }
    const started = performance.now();
    const failures: string[] = [];
    for (const endpoint of this.#settings.endpoints) {
      try {
        const res = await request(endpoint, {
          method: 'POST',
          body,
          headers,
          dispatcher: this.#dispatcher,
          signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
        });
        await res.body.dump();
        if (res.statusCode < 200 || res.statusCode > 299) failures.push(`${endpoint} answered ${res.statusCode}`);
      } catch (err) {
        failures.push(`${endpoint}: ${(err as Error).message}`);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    try {
      if (failures.length === 0) {
        await recordDelivered(this.#pool, notification.id, this.#settings.renotifyIntervalMs);
        this.#metrics?.deliveries.inc({ outcome: 'delivered' });
        this.#log.info({ notification: notification.name }, 'notification delivered');
      } else {
        const attempt = notification.attempts + 1;
        const retryInMs = retryDelay(attempt, this.#settings);
        await recordDeliveryFailed(this.#pool, notification.id, retryInMs);
        this.#wakeIn(retryInMs);
        this.#metrics?.deliveries.inc({ outcome: 'failed' });
        this.#log.warn({ notification: notification.name, attempt, retryInMs, failures }, 'notification delivery failed');
      }
      this.#metrics?.deliveryDuration.observe(seconds);
    } catch (err) {
      // The claim's lease runs out and the notification is tried again: nothing is lost.
      this.#log.warn({ err, notification: notification.name }, 'recording a delivery failed');
    }
  }

  /** Deletes read notifications past notifier.retention (one replica at a time). */
  async #purge(): Promise<void> {
    const lease = 'notifier/purge';
    try {
      if (!(await acquireLease(this.#pool, lease, this.#owner, PURGE_EVERY_MS))) return;
      const purged = await purgeNotifications(this.#pool, this.#settings.retentionMs);
      if (purged.notifications > 0) this.#log.info(purged, 'read notifications purged');
    } catch (err) {
      this.#log.warn({ err }, 'purging notifications failed');
    } finally {
      await releaseLease(this.#pool, lease, this.#owner).catch(() => undefined);
    }
  }

  /** Runs the retention purge now, without waiting for its interval or taking its lease (tests). */
  async purgeNow(): Promise<{ notifications: number; versions: number }> {
    return purgeNotifications(this.#pool, this.#settings.retentionMs);
  }
}

import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Notifier, retryDelay, type NotifierSettings } from '../../src/notifier/notifier.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { freshDatabase, silentLog } from '../helpers/db.js';
import { createPool } from '../../src/store/pool.js';
import { whenDone } from '../helpers/when-done.js';

/** A webhook receiver on loopback: records deliveries, answers with the statuses it is given. */
async function receiver(port = 0) {
  const deliveries: Array<{ at: number; body: string; signature: string | undefined }> = [];
  const statuses: number[] = [];
  let server: Server | undefined;
  const listen = (p: number) =>
    new Promise<number>((resolve) => {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString()));
        req.on('end', () => {
          deliveries.push({ at: Date.now(), body, signature: req.headers['x-tarsier-signature'] as string | undefined });
          res.writeHead(statuses.shift() ?? 200).end();
        });
      });
      server.listen(p, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port));
    });
  const bound = await listen(port);
  const close = () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  whenDone(close);
  return { url: `http://127.0.0.1:${bound}/hook`, port: bound, deliveries, statuses, close, reopen: () => listen(bound) };
}

/** An app on a fresh database, and that database's connection settings (the notifier's LISTEN needs them). */
async function appWithConnection(): Promise<TestApp & { connection: pg.PoolConfig }> {
  const connection = await freshDatabase();
  const pool = createPool(connection, 10, silentLog);
  whenDone(() => pool.end());
  return { ...(await testApp({ pool })), connection };
}

async function notifierFor(t: TestApp & { connection: pg.PoolConfig }, url: string, settings: Partial<NotifierSettings> = {}) {
  const notifier = new Notifier({
    pool: t.pool,
    connection: t.connection,
    settings: { endpoints: [url], attempts: 3, renotifyIntervalMs: 3600_000, secret: '', retentionMs: 3600_000, ...settings },
    log: silentLog,
    metrics: t.metrics,
  });
  await notifier.start();
  whenDone(() => notifier.stop());
  return notifier;
}

async function until(condition: () => boolean | Promise<boolean>, ms = 8000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

const createVulnerability = (t: TestApp, name: string) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/namespaces/debian%3A12/vulnerabilities',
    payload: { Vulnerability: { Name: name, Severity: 'High' } },
  });

describe('webhook delivery', () => {
  it('POSTs {"Notification":{"Name"}} within moments of the change, signed with the secret', async () => {
    const t = await appWithConnection();
    const hook = await receiver();
    await notifierFor(t, hook.url, { secret: 's3cret' });
    const started = Date.now();
    await createVulnerability(t, 'CVE-1');
    await until(() => hook.deliveries.length === 1);
    const name = (await t.pool.query('SELECT name FROM notification')).rows[0].name;
    expect(JSON.parse(hook.deliveries[0]!.body)).toEqual({ Notification: { Name: name } });
    expect(hook.deliveries[0]!.signature).toBe(`sha256=${createHmac('sha256', 's3cret').update(hook.deliveries[0]!.body).digest('hex')}`);
    // Woken by NOTIFY, not by the 5 s poll.
    expect(hook.deliveries[0]!.at - started).toBeLessThan(2000);
    await until(async () => json(await t.app.inject({ url: `/v1/notifications/${name}` })).Notification.Notified !== undefined);
    expect(await t.metrics.registry.getSingleMetricAsString('tarsier_notifier_deliveries_total')).toContain('outcome="delivered"} 1');
  });

  it('delivers again every renotifyinterval until read, and never after DELETE', async () => {
    const t = await appWithConnection();
    const hook = await receiver();
    await notifierFor(t, hook.url, { renotifyIntervalMs: 700 });
    await createVulnerability(t, 'CVE-2');
    await until(() => hook.deliveries.length >= 2, 5000);
    expect(hook.deliveries[1]!.at - hook.deliveries[0]!.at).toBeGreaterThanOrEqual(600);
    const name = (await t.pool.query('SELECT name FROM notification')).rows[0].name;
    await t.app.inject({ method: 'DELETE', url: `/v1/notifications/${name}` });
    const count = hook.deliveries.length;
    await new Promise((r) => setTimeout(r, 2000));
    expect(hook.deliveries.length).toBe(count);
  });

  it('retries a failing receiver with growing gaps and delivers once it recovers', async () => {
    const t = await appWithConnection();
    const hook = await receiver();
    hook.statuses.push(500, 503, 500);
    await notifierFor(t, hook.url, { attempts: 5 });
    await createVulnerability(t, 'CVE-3');
    await until(() => hook.deliveries.length === 4, 15_000);
    const gaps = hook.deliveries.slice(1).map((d, i) => d.at - hook.deliveries[i]!.at);
    // 1 s, 2 s, 4 s apart (the poll may add a little).
    expect(gaps[0]).toBeGreaterThanOrEqual(900);
    expect(gaps[1]).toBeGreaterThanOrEqual(1900);
    expect(gaps[2]).toBeGreaterThanOrEqual(3900);
    // The receiver has the delivery before the notifier has its answer and records it.
    const state = async () =>
      (await t.pool.query('SELECT notified_at IS NOT NULL AS delivered, delivery_attempts FROM notification')).rows[0];
    await expect.poll(state).toEqual({ delivered: true, delivery_attempts: 0 });
  }, 20_000);

  it('keeps a notification for a receiver that refuses connections, and delivers when it is back', async () => {
    const t = await appWithConnection();
    const hook = await receiver();
    await hook.close();
    await notifierFor(t, hook.url, { attempts: 2 });
    await createVulnerability(t, 'CVE-4');
    await until(async () => (await t.pool.query('SELECT delivery_attempts FROM notification')).rows[0].delivery_attempts >= 1);
    await hook.reopen();
    await until(() => hook.deliveries.length === 1, 10_000);
  }, 15_000);

  it('leaves a notification claimed by a replica that died to the others after the lease', async () => {
    const t = await appWithConnection();
    await createVulnerability(t, 'CVE-5');
    // A replica claimed it (lease moved next_delivery_at ahead) and died before delivering.
    await t.pool.query("UPDATE notification SET next_delivery_at = now() + interval '200 milliseconds'");
    const hook = await receiver();
    await notifierFor(t, hook.url);
    await until(() => hook.deliveries.length === 1, 8000);
  });
});

describe('the LISTEN connection', () => {
  const listeners = async (t: TestApp) =>
    (
      await t.pool.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN tarsier_notifications'",
      )
    ).rows.map((r) => r.pid);
  const dropListeners = (t: TestApp) =>
    t.pool.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN tarsier_notifications'",
    );

  it('listens again after the database drops it, and leaves no connection behind once stopped', async () => {
    const t = await appWithConnection();
    const hook = await receiver();
    const notifier = new Notifier({
      pool: t.pool,
      connection: t.connection,
      settings: { endpoints: [hook.url], attempts: 3, renotifyIntervalMs: 3600_000, secret: '', retentionMs: 3600_000 },
      log: silentLog,
    });
    await notifier.start();
    const [first] = await listeners(t);
    expect(first).toBeDefined();
    await dropListeners(t);
    await until(async () => (await listeners(t)).some((pid) => pid !== first), 10_000);
    await createVulnerability(t, 'CVE-6');
    await until(() => hook.deliveries.length === 1, 2000); // woken by the new LISTEN, not the 5 s poll
    // Dropped again, noticed, and stopped before the reconnect is due: no listener comes back.
    await dropListeners(t);
    await until(async () => (await listeners(t)).length === 0);
    await new Promise((r) => setTimeout(r, 200));
    await notifier.stop();
    await new Promise((r) => setTimeout(r, 6000));
    expect(await listeners(t)).toEqual([]);
  }, 25_000);
});

describe('retention', () => {
  it('purges read notifications past the retention and the vulnerability versions only they showed', async () => {
    const t = await testApp();
    await createVulnerability(t, 'CVE-6');
    await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-6',
      payload: { Vulnerability: { Severity: 'Low' } },
    });
    const names = (await t.pool.query('SELECT name FROM notification ORDER BY id')).rows.map((r) => r.name);
    await t.app.inject({ method: 'DELETE', url: `/v1/notifications/${names[1]}` });
    await t.pool.query("UPDATE notification SET deleted_at = now() - interval '2 hours' WHERE name = $1", [names[1]]);
    const notifier = new Notifier({
      pool: t.pool,
      connection: {},
      settings: { endpoints: [], attempts: 1, renotifyIntervalMs: 1, secret: '', retentionMs: 3600_000 },
      log: silentLog,
    });
    // The unread creation notification still shows the first version; nothing else does.
    expect(await notifier.purgeNow()).toEqual({ notifications: 1, versions: 0 });
    await t.app.inject({ method: 'DELETE', url: `/v1/notifications/${names[0]}` });
    await t.pool.query("UPDATE notification SET deleted_at = now() - interval '2 hours'");
    expect(await notifier.purgeNow()).toEqual({ notifications: 1, versions: 1 });
    const live = await t.app.inject({ url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-6' });
    expect(json(live).Vulnerability.Severity).toBe('Low');
  });
});

describe('retry delays', () => {
  it('double from 1 s for the first attempts, then follow renotifyinterval capped at 15 min', () => {
    const settings = { attempts: 5, renotifyIntervalMs: 2 * 3600_000 };
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelay(n, settings))).toEqual([1000, 2000, 4000, 8000, 900_000, 900_000]);
    expect(retryDelay(5, { attempts: 5, renotifyIntervalMs: 60_000 })).toBe(60_000);
  });
});

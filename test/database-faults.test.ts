/**
 * A database restart under traffic: a real Tarsier process on a PostgreSQL of its own, whose
 * backends are terminated and which is then stopped and started again while clients read and
 * write and an update is downloading. The process must stay up, answer 503 in each API's
 * envelope while the database is away, and serve, write and deliver again once it is back.
 * Queued image scans whose workers lose the database in the middle of a scan all run once it is
 * back, without a restart of Tarsier.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/store/embedded.js';
import { debianLayer, layer, ociLayout, pushImage } from './helpers/oci-image.js';
import { whenDone } from './helpers/when-done.js';
import { databaseUrl, startTarsier, type TarsierProcess } from './helpers/process.js';
import { missingRegistryPrograms, startRegistry, startRegistryProxy } from './helpers/registry.js';

const TRACKER = fileURLToPath(new URL('./fixtures/feeds/debian/security-tracker-excerpt.json', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An embedded PostgreSQL of the test's own on a fixed port, to be stopped and started again where clients expect it. */
async function ownDatabase(name: string) {
  const dir = await mkdtemp(join(tmpdir(), `tarsier-${name}-`));
  await chmod(dir, 0o755); // the embedded PostgreSQL runs as another user when the tests run as root
  whenDone(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'pg');
  const port = await freePort();
  const log = pino({ level: 'silent' });
  let database: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, log, port, ephemeral: true });
  whenDone(() => database.stop());
  return {
    dir,
    get current(): EmbeddedPostgres {
      return database;
    },
    stop: () => database.stop(),
    async start(): Promise<void> {
      database = await startEmbeddedPostgres({ dataDir, log, port, ephemeral: true });
    },
  };
}

/** Waits for condition, failing at once if the server process ends meanwhile. */
async function until(server: TarsierProcess, condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) {
    if (server.child.exitCode !== null || server.child.signalCode !== null)
      throw new Error(`tarsier exited: ${JSON.stringify(server.logs.slice(-3))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One HTTP listener standing in for the Debian tracker (held until released) and a webhook receiver. */
async function upstream() {
  let feedRequested!: () => void;
  const feedArrived = new Promise<void>((resolve) => (feedRequested = resolve));
  let releaseFeed!: () => void;
  const feedReleased = new Promise<void>((resolve) => (releaseFeed = resolve));
  const deliveries: string[] = [];
  const waiters: Array<() => void> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/tracker')) {
      feedRequested();
      void feedReleased.then(async () => res.writeHead(200, { 'content-type': 'application/json' }).end(await readFile(TRACKER)));
      return;
    }
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      deliveries.push(body);
      res.writeHead(200).end();
      waiters.splice(0).forEach((w) => w());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  whenDone(() => {
    releaseFeed();
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    feedArrived,
    releaseFeed: () => releaseFeed(),
    deliveries,
    /** Resolves once a delivery whose body contains text has arrived. */
    async delivered(text: string): Promise<void> {
      while (!deliveries.some((d) => d.includes(text))) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

describe('a PostgreSQL restart under load', () => {
  it('leaves the process running: in-flight work fails with 503, and everything works once the database is back', async () => {
    const own = await ownDatabase('pg-restart');
    const { dir } = own;
    const feeds = await upstream();
    const config = join(dir, 'config.yaml');
    await writeFile(
      config,
      [
        'clair:',
        '  updater:',
        '    interval: 1h',
        '    enabledupdaters: [debian]',
        '    sources:',
        `      debian: { url: "${feeds.origin}/tracker/json" }`,
        '  notifier:',
        `    endpoints: ["${feeds.origin}/hook"]`,
        '',
      ].join('\n'),
    );
    const server = await startTarsier({ DATABASE_URL: databaseUrl(own.current.connection), TARSIER_CONFIG: config });
    const api = `http://127.0.0.1:${server.apiPort}`;

    // Four clients, reading and writing in both APIs, until told to stop.
    const statuses: number[] = [];
    const unavailable: unknown[] = [];
    let loading = true;
    let written = 0;
    const client = async (i: number) => {
      while (loading && server.child.exitCode === null) {
        const write = i % 2 === 0;
        const res = await fetch(
          write ? `${api}/v1/namespaces/debian%3A12/vulnerabilities` : i === 1 ? `${api}/v1/namespaces` : `${api}/status`,
          write ? { method: 'POST', body: JSON.stringify({ Vulnerability: { Name: `CVE-LOAD-${i}-${written++}`, Severity: 'Low' } }) } : {},
        );
        statuses.push(res.status);
        const body = await res.json();
        if (res.status === 503) unavailable.push(body);
      }
    };
    const clients = [0, 1, 2, 3].map(client);

    // The update is downloading (the feed is held): terminate every backend of the server, then stop PostgreSQL.
    await feeds.feedArrived;
    const admin = new pg.Client(own.current.adminConnection);
    await admin.connect();
    const terminated = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tarsier'");
    await admin.end();
    expect(terminated.rowCount).toBeGreaterThan(0);
    await own.stop();
    feeds.releaseFeed();

    // While it is down: the process answers, with 503s, and /health says so.
    const seen = statuses.length;
    await until(server, () => statuses.slice(seen).filter((s) => s === 503).length >= 8);
    expect((await fetch(`http://127.0.0.1:${server.healthPort}/health`)).status).toBe(503);
    await until(server, () => server.logs.some((l) => l.msg === 'updater run failed'));

    // Back on the same port: requests succeed again without a restart of Tarsier.
    await own.start();
    await until(server, async () => (await fetch(`http://127.0.0.1:${server.healthPort}/health`)).status === 200);
    loading = false;
    await Promise.all(clients);

    expect(server.child.exitCode).toBeNull();
    expect(new Set(statuses)).toEqual(new Set([200, 201, 503]));
    expect(unavailable).toContainEqual({ Error: { Message: 'the database is unavailable; retry shortly' } });
    expect(unavailable).toContainEqual({
      error: 'the database is unavailable; retry shortly',
      code: 14,
      message: 'the database is unavailable; retry shortly',
    });

    const after = [];
    for (let i = 0; i < 20; i++) {
      after.push(
        (
          await fetch(`${api}/v1/namespaces/debian%3A12/vulnerabilities`, {
            method: 'POST',
            body: JSON.stringify({ Vulnerability: { Name: `CVE-AFTER-${i}`, Severity: 'High' } }),
          })
        ).status,
      );
      after.push((await fetch(`${api}/status`)).status);
    }
    expect(after.every((s) => s === 200 || s === 201)).toBe(true);
    // The notifier listens again: a change made now is delivered.
    const check = new pg.Client(own.current.connection);
    await check.connect();
    const { rows } = await check.query(
      "SELECT n.name FROM notification n JOIN vulnerability v ON v.id = n.new_vulnerability_id WHERE v.name = 'CVE-AFTER-19'",
    );
    await check.end();
    await feeds.delivered(rows[0].name);
    const latest = (await (await fetch(`${api}/v1/namespaces/debian%3A12/vulnerabilities/CVE-AFTER-19`)).json()) as {
      Vulnerability: { Name: string };
    };
    expect(latest.Vulnerability.Name).toBe('CVE-AFTER-19');

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});

const missing = missingRegistryPrograms();

describe.skipIf(missing.length > 0)(
  `queued image scans across a PostgreSQL restart${missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : ''}`,
  () => {
    it(
      'runs every accepted scan once the database is back, also those whose workers lost it in the middle of a scan',
      { timeout: 180_000 },
      async () => {
        const own = await ownDatabase('queue-restart');
        const registry = await startRegistry();
        whenDone(() => registry.stop());
        // Holds the blob downloads of the scans under way until the database has gone.
        const held = new Set<string>();
        let heldChanged = (): void => undefined;
        let releaseBlobs!: () => void;
        const blobsReleased = new Promise<void>((resolve) => (releaseBlobs = resolve));
        whenDone(() => releaseBlobs());
        const proxy = await startRegistryProxy(registry, {
          blob: async (blob, body) => {
            held.add(blob.repository);
            heldChanged();
            await blobsReleased;
            return body;
          },
        });
        whenDone(() => proxy.close());

        const images = 6;
        const workers = 2;
        const digests: string[] = [];
        for (let i = 0; i < images; i++) {
          const top = layer({ [`srv/app-${i}`]: `app ${i}` });
          const layout = await ociLayout(join(own.dir, `layout-${i}`), { layers: [debianLayer(9), top] });
          digests.push(await pushImage(registry, layout.dir, `queue/app-${i}`, 'v1'));
        }
        const config = join(own.dir, 'config.yaml');
        await writeFile(
          config,
          [
            'clair:',
            '  updater:',
            '    interval: 0',
            '  images:',
            `    workers: ${workers}`,
            '  registries:',
            `    "${proxy.host}": { insecure: true }`,
            '',
          ].join('\n'),
        );
        const server = await startTarsier({ DATABASE_URL: databaseUrl(own.current.connection), TARSIER_CONFIG: config });
        const api = `http://127.0.0.1:${server.apiPort}`;
        for (let i = 0; i < images; i++) {
          const res = await fetch(`${api}/tarsier/v1/images?wait=false`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ reference: `${proxy.host}/queue/app-${i}:v1` }),
          });
          expect(res.status, await res.clone().text()).toBe(202);
        }

        // Every worker is in the middle of a scan (a download held): stop PostgreSQL, then let the
        // scans go on. Their writes fail, and so does recording the failure of their jobs.
        await new Promise<void>((resolve) => {
          heldChanged = () => held.size >= workers && resolve();
          heldChanged();
        });
        await own.stop();
        releaseBlobs();
        await until(server, () => server.logs.filter((l) => String(l.msg).startsWith('Failed to release job')).length >= workers);

        // PostgreSQL is back on the same port: every accepted scan runs, without a restart of Tarsier.
        await own.start();
        const scanned = async (): Promise<string[]> => {
          const res = await fetch(`${api}/tarsier/v1/images?registry=${proxy.host}`);
          if (res.status !== 200) return [];
          return ((await res.json()) as { Images: Array<{ Digest: string }> }).Images.map((i) => i.Digest).sort();
        };
        await expect.poll(scanned, { timeout: 60_000, interval: 250 }).toEqual([...digests].sort());
        expect(server.logs.some((l) => l.msg === 'image queue workers restarted')).toBe(true);

        server.child.kill('SIGTERM');
        expect(await server.exited).toBe(0);
      },
    );
  },
);

/**
 * Work done for a client that went away is cancelled: the layer download is closed, a
 * decompressor process is killed, nothing is stored — unless another request waits for the same
 * layer, which then gets it.
 */
import { request as httpRequest, createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import * as zlib from 'node:zlib';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { debian12, dpkgStatus } from '../helpers/dpkg-status.js';
import { compressWith, gzip, tarball } from '../helpers/tarball.js';
import { whenDone } from '../helpers/when-done.js';

/** Waits for condition, checking it whenever the event loop turns. */
async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((r) => setTimeout(r, 10));
}

/** A layer server that sends the first part of a blob, then holds the rest until released. */
async function heldServer() {
  const layer = tarball([
    { path: 'etc/os-release', content: debian12 },
    { path: 'var/lib/dpkg/status', content: dpkgStatus({ name: 'bash', version: '5.2.15-2+b2' }) },
    // Bulk after the package database, so the walk needs the held part to finish.
    { path: 'srv/blob', content: Buffer.alloc(4 << 20, 7) },
  ]);
  const blobs: Record<string, Buffer> = { '/layer.tar.gz': gzip(layer), '/layer.tar.zst': compressWith('zstd', layer) };
  const open = new Set<ServerResponse>();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let requests = 0;
  const server = createServer((req, res) => {
    const blob = blobs[req.url ?? ''];
    if (!blob) return void res.writeHead(404).end();
    requests++;
    open.add(res);
    res.on('close', () => open.delete(res));
    res.writeHead(200, { 'content-length': String(blob.length) });
    const half = Math.floor(blob.length / 2);
    res.write(blob.subarray(0, half));
    void released.then(() => res.end(blob.subarray(half)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  whenDone(() => {
    release();
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: (path: string) => `${origin}${path}`, open, release, requests: () => requests };
}

/** Whether this Node decompresses zstd itself (22.15+, 24) rather than with the zstd program. */
const zstdInProcess = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function';

/** zstd processes started by this process (the test runs the app in-process). */
function zstdChildren(): number {
  let count = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (stat.includes('(zstd)') && Number(fields[1]) === process.pid) count++;
    } catch {
      // gone meanwhile
    }
  }
  return count;
}

describe('a client that goes away', () => {
  let t: TestApp;
  let port: number;
  const logs: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    t = await testApp({ log: pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) }) });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as AddressInfo).port;
  });

  /** Sends a POST and returns a handle to walk away from it, and its answer if it comes. */
  function post(path: string, body: unknown) {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json' } });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
    });
    answer.catch(() => undefined);
    req.end(JSON.stringify(body));
    return { leave: () => req.destroy(), answer };
  }

  const layerCount = async () => (await t.pool.query('SELECT count(*)::int AS n FROM layer')).rows[0].n as number;

  it('stops the download of a v1 layer, and the zstd process reading it (on Node 20), when the only client leaves', async () => {
    const held = await heldServer();
    const client = post('/v1/layers', { Layer: { Name: 'left-zstd', Path: held.url('/layer.tar.zst'), Format: 'Docker' } });
    await until(() => held.open.size === 1 && zstdChildren() === (zstdInProcess ? 0 : 1));
    client.leave();
    await until(() => held.open.size === 0);
    await until(() => zstdChildren() === 0);
    expect(await layerCount()).toBe(0);
    await until(async () => (await t.metrics.registry.getSingleMetricAsString('tarsier_http_errors_total')).includes('reason="cancelled"'));
    // The layer can be posted again at once: no lease or in-flight work is left behind.
    held.release();
    const again = post('/v1/layers', { Layer: { Name: 'left-zstd', Path: held.url('/layer.tar.zst'), Format: 'Docker' } });
    expect((await again.answer).status).toBe(201);
  });

  it('keeps downloading for the other request waiting for the same layer', async () => {
    const held = await heldServer();
    const layer = { Layer: { Name: 'shared', Path: held.url('/layer.tar.gz'), Format: 'Docker' } };
    const leaving = post('/v1/layers', layer);
    await until(() => held.open.size === 1);
    const staying = post('/v1/layers', layer);
    await until(() => logs.some((l) => l.msg === 'joining the indexing of the layer under way' && l.layer === 'shared'));
    leaving.leave();
    expect(held.open.size).toBe(1);
    held.release();
    const answer = await staying.answer;
    expect(answer.status, answer.body).toBe(201);
    expect(held.requests()).toBe(1);
    expect(await layerCount()).toBeGreaterThanOrEqual(1);
  });

  it('stops the scans of an ancestry when its client leaves', async () => {
    const held = await heldServer();
    const client = post('/ancestry', {
      ancestry_name: 'left',
      format: 'Docker',
      layers: [{ hash: 'sha256:held', path: held.url('/layer.tar.gz') }],
    });
    await until(() => held.open.size === 1);
    client.leave();
    await until(() => held.open.size === 0);
    expect((await t.pool.query("SELECT count(*)::int AS n FROM layer_scan WHERE key = 'sha256:held'")).rows[0].n).toBe(0);
    expect((await t.pool.query("SELECT count(*)::int AS n FROM ancestry WHERE name = 'left'")).rows[0].n).toBe(0);
  });
});

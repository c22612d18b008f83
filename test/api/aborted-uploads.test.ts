/**
 * Clients that give up half-way through a layer upload (a cancelled CI job): each such request
 * fails alone, the server process stays up, nothing is left unhandled, and the next complete
 * upload of the same layer is scanned.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/db.js';
import { debianLayerTar } from '../helpers/image-archives.js';
import { prng } from '../helpers/prng.js';
import { databaseUrl, startTarsier } from '../helpers/process.js';
import { tarball } from '../helpers/tarball.js';

const CHUNK = 64 * 1024;

/** A Debian layer with a megabyte of incompressible file data after its package database. */
function layer(): Buffer {
  const random = prng(26);
  const noise = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < noise.length; i++) noise[i] = Math.floor(random() * 256);
  const base = debianLayerTar();
  // Drop the base's end-of-archive blocks so the file data follows its entries.
  const withoutEnd = base.subarray(0, base.length - 1024);
  return gzipSync(Buffer.concat([withoutEnd, tarball([{ path: 'usr/share/noise.bin', content: noise }])]));
}

/** Sends the first `chunks` chunks of body, each once the socket took the previous one, then drops the connection. */
function abortedUpload(port: number, path: string, body: Buffer, chunks: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path,
      headers: { 'content-type': 'application/octet-stream', 'content-length': body.length },
    });
    req.on('error', () => undefined);
    req.on('close', () => resolve());
    let sent = 0;
    const next = (): void => {
      if (sent === chunks) {
        req.destroy();
        return;
      }
      const start = sent++ * CHUNK;
      req.write(body.subarray(start, start + CHUNK), next);
    };
    next();
  });
}

describe('aborted layer uploads', () => {
  it('fail alone: after 20 uploads dropped at different points the server is up, logged no unhandled error and scans the layer', async () => {
    const server = await startTarsier({ DATABASE_URL: databaseUrl(await freshDatabase()) });
    const body = layer();
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    const path = `/tarsier/v1/layers/${digest}`;
    const chunks = Math.ceil(body.length / CHUNK);

    for (let round = 0; round < 20; round++) {
      await abortedUpload(server.apiPort, path, body, 1 + (round % (chunks - 1)));
    }

    const head = await fetch(`http://127.0.0.1:${server.apiPort}${path}`, { method: 'HEAD' });
    expect(head.status).toBe(404);
    const put = await fetch(`http://127.0.0.1:${server.apiPort}${path}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body,
    });
    expect(put.status, await put.clone().text()).toBe(201);
    expect(await put.json()).toMatchObject({ Layer: { Digest: digest, NamespaceName: 'debian:9' } });

    expect(server.child.exitCode).toBeNull();
    expect(server.logs.filter((entry) => entry.level === 50 || entry.level === 60)).toEqual([]);
    const metrics = await (await fetch(`http://127.0.0.1:${server.apiPort}/metrics`)).text();
    expect(metrics).toMatch(/^tarsier_unhandled_rejections_total 0$/m);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});

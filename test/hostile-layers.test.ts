/**
 * Hostile layers against a real server process, whose memory is read from /proc: a gzip stream
 * of 10 GiB of zeros (not a tar beyond its first kilobyte) is answered in seconds with memory
 * bounded, and its download is cut, not read to the end.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { freshDatabase } from './helpers/db.js';
import { databaseUrl, startTarsier } from './helpers/process.js';
import { whenDone } from './helpers/when-done.js';

/** Peak resident memory of a process so far (VmHWM), in MiB. */
function peakRssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'))!;
  return Number(line.replace(/\D+/g, '')) / 1024;
}

describe('a gzip stream of 10 GiB of zeros', () => {
  it("is answered in seconds, with the server's memory bounded and the download cut short", async () => {
    // 160 gzip members of 64 MiB of zeros: 10 GiB expanded, about 10 MB on the wire.
    const member = gzipSync(Buffer.alloc(64 << 20));
    const members = 160;
    let sent = 0;
    let closedEarly = false;
    const empty = gzipSync(Buffer.alloc(1024)); // only the end-of-archive marker
    const layers = createServer((req, res) => {
      if (req.url === '/empty.tar.gz') return void res.end(empty);
      res.writeHead(200, { 'content-length': String(member.length * members) });
      let i = 0;
      const next = (): void => {
        while (i < members) {
          i++;
          sent += member.length;
          if (!res.write(member)) return void res.once('drain', next);
        }
        res.end();
      };
      res.on('close', () => (closedEarly = i < members));
      next();
    });
    await new Promise<void>((resolve) => layers.listen(0, '127.0.0.1', resolve));
    whenDone(() => new Promise<void>((resolve) => layers.close(() => resolve())));
    const url = `http://127.0.0.1:${(layers.address() as AddressInfo).port}/zeros.tar.gz`;

    const server = await startTarsier({ DATABASE_URL: databaseUrl(await freshDatabase()) });
    // The baseline is a server that has already indexed a layer (its code loaded, its start-up
    // work done): what is measured is what the 10 GiB stream adds, not a loaded machine's start-up.
    const warmUp = await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers`, {
      method: 'POST',
      body: JSON.stringify({ Layer: { Name: 'empty', Path: url.replace('zeros.tar.gz', 'empty.tar.gz'), Format: 'Docker' } }),
    });
    expect(warmUp.status, await warmUp.text()).toBe(201);
    const before = peakRssMiB(server.child.pid!);
    const res = await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers`, {
      method: 'POST',
      body: JSON.stringify({ Layer: { Name: 'zeros', Path: url, Format: 'Docker' } }),
    });
    const body = await res.text();
    // An archive of nothing but the end-of-archive marker: a valid, empty layer.
    expect(res.status, body).toBe(201);
    const report = await (await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers/zeros?features`)).json();
    expect(report).toEqual({ Layer: { Name: 'zeros', IndexedByVersion: expect.any(Number), Features: [] } });
    // In seconds, not minutes: the walk stopped at the marker and the download was cut.
    expect(peakRssMiB(server.child.pid!) - before).toBeLessThan(100);
    expect(closedEarly).toBe(true);
    expect(sent).toBeLessThan((member.length * members) / 2);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});

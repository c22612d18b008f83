import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32, gunzipSync, inflateRawSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { ReportCache } from '../../src/reports/report-cache.js';
import { gzipChunks, gzipReport } from '../../src/reports/report-gzip.js';
import { curlCompressed } from '../helpers/curl.js';
import { prng } from '../helpers/prng.js';
import { whenDone } from '../helpers/when-done.js';

/**
 * Layer reports gzip-compressed from chunks of their features, each compressed once and kept by
 * its bytes: one gzip member that decompresses to the report, whoever reads it.
 */

interface Feature {
  id: number;
  text: string;
}

const WORDS = ['buffer', 'overflow', 'in', 'the', 'parser', 'allows', 'remote', 'attackers', 'to', 'cause', 'denial', 'of', 'service'];

/** 400 features of varied sizes (most small, some with many vulnerabilities), seeded. */
function features(): Feature[] {
  const random = prng(2024);
  return Array.from({ length: 400 }, (_, i) => {
    const vulnerabilities = random() < 0.6 ? 0 : Math.floor(random() * (random() < 0.1 ? 40 : 6));
    const described = Array.from({ length: vulnerabilities }, (_, v) => {
      const words = Array.from({ length: 20 + Math.floor(random() * 60) }, () => WORDS[Math.floor(random() * WORDS.length)]);
      return `{"Name":"CVE-2024-${i * 100 + v}","Description":"${words.join(' ')}"}`;
    });
    return { id: 5000 + i * 7, text: `{"Name":"package-${i}","Version":"1.${i}-1","Vulnerabilities":[${described.join(',')}]}` };
  });
}

/** A report-shaped body of these features, with its chunks. */
function report(list: readonly Feature[], opening = '{"Layer":{"Name":"top","Features":[') {
  const parts = list.map((f, i) => Buffer.from(`${i > 0 ? ',' : ''}${f.text}`));
  const start = Buffer.byteLength(opening);
  const body = Buffer.concat([Buffer.from(opening), ...parts, Buffer.from(']}}')]);
  return {
    body,
    chunks: gzipChunks(
      list.map((f) => f.id),
      parts.map((p) => p.length),
      start,
    ),
    featureEnds: parts.map((_, i) => start + parts.slice(0, i + 1).reduce((sum, p) => sum + p.length, 0)),
  };
}

/** The gzip member's deflate stream inflated alone (it must end with a final block) and its trailer. */
function singleMember(gzip: Buffer): { inflated: Buffer; crc: number; size: number } {
  expect([...gzip.subarray(0, 4)]).toEqual([0x1f, 0x8b, 8, 0]);
  return {
    inflated: inflateRawSync(gzip.subarray(10, -8)),
    crc: gzip.readUInt32LE(gzip.length - 8),
    size: gzip.readUInt32LE(gzip.length - 4),
  };
}

describe('report gzip', () => {
  it('splits the features into runs of whole features, in order, covering them all', () => {
    const { body, chunks, featureEnds } = report(features());
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks[0]!.start).toBe(Buffer.byteLength('{"Layer":{"Name":"top","Features":['));
    expect(chunks.at(-1)!.end).toBe(body.length - 3);
    chunks.forEach((chunk, i) => {
      if (i > 0) expect(chunk.start).toBe(chunks[i - 1]!.end);
      expect(featureEnds).toContain(chunk.end);
      if (i < chunks.length - 1) expect(chunk.end - chunk.start).toBeGreaterThanOrEqual(64 * 1024);
    });
  });

  it('is one gzip member that decompresses to the body, with and without chunks, whatever the size of the bytes around them', async () => {
    const cache = new ReportCache();
    const { body, chunks } = report(features(), `{"Layer":{"Name":"${'x'.repeat(70_000)}","Features":[`);
    for (const whole of [
      { body, chunks },
      { body, chunks: [] },
      { body: Buffer.from('{"Layer":{}}'), chunks: [] },
    ]) {
      const gzip = await gzipReport(whole, cache);
      expect(gunzipSync(gzip).equals(whole.body)).toBe(true);
      const member = singleMember(gzip);
      expect(member.inflated.equals(whole.body)).toBe(true);
      expect([member.crc, member.size]).toEqual([crc32(whole.body), whole.body.length]);
    }
  });

  it('compresses only the chunks whose bytes changed, in a rebuild or in another report listing the same run', async () => {
    const cache = new ReportCache();
    const compressed = vi.spyOn(cache, 'keepGzipChunk');
    const list = features();
    const before = report(list);
    await gzipReport(before, cache);
    expect(compressed).toHaveBeenCalledTimes(before.chunks.length);

    // A vulnerability changed: one feature's bytes grow.
    compressed.mockClear();
    const target = list.findIndex((f, i) => i >= 200 && f.text.includes('CVE'));
    const changed = list.map((f, i) => (i === target ? { ...f, text: f.text.replace('"Name":"CVE', '"Name":"CVE-CHANGED') } : f));
    const rebuilt = report(changed);
    expect(gunzipSync(await gzipReport(rebuilt, cache)).equals(rebuilt.body)).toBe(true);
    expect(compressed).toHaveBeenCalledTimes(1);

    // Another image: a layer of its own, a few packages fewer at the start: past the first chunk, the same chunks.
    compressed.mockClear();
    const other = report(list.slice(5), '{"Layer":{"Name":"other","Features":[');
    expect(gunzipSync(await gzipReport(other, cache)).equals(other.body)).toBe(true);
    expect(compressed.mock.calls.length).toBeLessThanOrEqual(2);
  });

  it('keeps compressed chunks within its bound', async () => {
    const cache = new ReportCache({ gzipChunkBytes: 40_000 });
    const { body, chunks } = report(features());
    expect(gunzipSync(await gzipReport({ body, chunks }, cache)).equals(body)).toBe(true);
    expect(cache.bytes.gzipChunks).toBeGreaterThan(0);
    expect(cache.bytes.gzipChunks).toBeLessThanOrEqual(40_000);
  });

  it('is read whole by curl --compressed and by fetch', async () => {
    const { body, chunks } = report(features());
    const gzip = await gzipReport({ body, chunks }, new ReportCache());
    const server = createServer((_, res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzip),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    whenDone(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const viaCurl = await curlCompressed(url);
    expect(viaCurl.encoding).toBe('gzip');
    expect(viaCurl.body.equals(body)).toBe(true);
    expect(Buffer.from(await (await fetch(url)).arrayBuffer()).equals(body)).toBe(true);
  });
});

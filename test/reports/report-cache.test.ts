import { describe, expect, it } from 'vitest';
import { ReportCache, type CachedReport, type Fragment } from '../../src/reports/report-cache.js';

const report = (bytes: number, layers: number[] = [1], features: number[] = []): CachedReport => ({
  body: Buffer.alloc(bytes, 'x'),
  layers,
  features,
  chunks: [],
});
const fragment = (text: string): Fragment => ({ head: Buffer.from(`{"Name":"${text}"`), tail: Buffer.from('}') });

function listeningCache(limits?: { reportBytes?: number; fragmentBytes?: number }): ReportCache {
  const cache = new ReportCache(limits);
  cache.listening();
  return cache;
}

describe('ReportCache', () => {
  it('serves nothing until it hears changes, and nothing once it stops hearing them', () => {
    const cache = new ReportCache();
    expect(cache.keepReport('a', report(10), cache.stamp())).toBeUndefined();
    cache.listening();
    cache.keepReport('a', report(10), cache.stamp());
    cache.keepFragment(7, 'B', fragment('openssl'), cache.stamp());
    expect(cache.report('a')).toBeDefined();
    cache.lost();
    expect(cache.report('a')).toBeUndefined();
    expect(cache.fragment(7, 'B')).toBeUndefined();
    // Listening again starts from nothing: what changed meanwhile was not heard.
    cache.listening();
    expect(cache.report('a')).toBeUndefined();
  });

  it('drops exactly the reports and fragments that show a changed feature version or layer', () => {
    const cache = listeningCache();
    const stamp = cache.stamp();
    cache.keepReport('a', report(10, [1], [100, 101]), stamp);
    const b = cache.keepReport('b', report(10, [2, 1], [101, 102]), stamp);
    const c = cache.keepReport('c', report(10, [3], [103]), stamp);
    for (const id of [100, 101, 102, 103]) cache.keepFragment(id, 'B+v', fragment(String(id)), stamp);

    cache.changed('features', [100]);
    expect([cache.report('a'), cache.report('b'), cache.report('c')]).toEqual([undefined, b, c]);
    expect([100, 101, 102, 103].map((id) => cache.fragment(id, 'B+v') !== undefined)).toEqual([false, true, true, true]);

    cache.changed('layers', [1]);
    expect([cache.report('b'), cache.report('c')]).toEqual([undefined, c]);
  });

  it("keeps a layer's resolved features until the layer or an ancestor changes, whatever happens to matches", () => {
    const cache = listeningCache();
    const contents = (name: string, chain: number[]) => ({
      layer: { id: chain[0]!, name, parentId: chain[1] ?? null, parentName: null, namespace: 'debian:12', scanId: 1, indexedByVersion: 1 },
      features: [],
      chain,
    });
    cache.keepLayerContents(contents('child', [2, 1]), cache.stamp());
    cache.keepLayerContents(contents('other', [3]), cache.stamp());
    cache.changed('features', [2, 1, 3]);
    expect(cache.layerContents('child')?.chain).toEqual([2, 1]);
    cache.changed('layers', [1]);
    expect(cache.layerContents('child')).toBeUndefined();
    expect(cache.layerContents('other')?.chain).toEqual([3]);
    const stamp = cache.stamp();
    cache.changed('layers', [3]);
    cache.keepLayerContents(contents('other', [3]), stamp);
    expect(cache.layerContents('other')).toBeUndefined();
  });

  it('does not keep what a build read before a change to it was heard', () => {
    const cache = listeningCache();
    const stamp = cache.stamp();
    // Heard while the build ran: a change to other feature versions does not matter...
    cache.changed('features', [500]);
    expect(cache.keepReport('kept', report(10, [1], [100]), stamp)).toBeDefined();
    cache.keepFragment(100, 'B', fragment('kept'), stamp);
    expect(cache.fragment(100, 'B')).toBeDefined();
    // ...one to the feature versions or layers it read does, as does a gap in what was heard.
    cache.changed('features', [101]);
    cache.changed('layers', [2]);
    expect(cache.keepReport('feature', report(10, [1], [101]), stamp)).toBeUndefined();
    cache.keepFragment(101, 'B', fragment('stale'), stamp);
    expect(cache.fragment(101, 'B')).toBeUndefined();
    expect(cache.keepReport('layer', report(10, [2], [100]), stamp)).toBeUndefined();
    const beforeGap = cache.stamp();
    cache.listening();
    expect(cache.keepReport('gap', report(10, [9], [900]), beforeGap)).toBeUndefined();
  });

  it('evicts the least recently used past its bound, and keeps nothing over a quarter of it', () => {
    const cache = listeningCache({ reportBytes: 4000 });
    const stamp = cache.stamp();
    for (const key of ['a', 'b', 'c']) cache.keepReport(key, report(1000), stamp);
    cache.report('a');
    cache.keepReport('d', report(1000), stamp);
    cache.keepReport('e', report(1000), stamp);
    expect(['a', 'b', 'c', 'd', 'e'].map((k) => cache.report(k) !== undefined)).toEqual([true, false, true, true, true]);
    expect(cache.keepReport('huge', report(1001), stamp)).toBeUndefined();
    expect(cache.bytes.reports).toBe(4000);
  });

  it('keeps a gzip form with the report it belongs to, and counts it against the bound', () => {
    const cache = listeningCache({ reportBytes: 10_000 });
    const stamp = cache.stamp();
    const a = cache.keepReport('a', report(2000), stamp)!;
    cache.addGzip('a', a, Buffer.alloc(5000));
    expect(cache.report('a')?.gzip?.length).toBe(5000);
    // 7000 bytes used: two more 2000-byte reports (11000 > 10000) push the oldest (a) out.
    cache.keepReport('b', report(2000), stamp);
    cache.keepReport('c', report(2000), stamp);
    expect(cache.report('a')).toBeUndefined();
    // A gzip form made for a report since replaced is not attached to the new one.
    const old = cache.keepReport('b', report(2000), stamp)!;
    cache.keepReport('b', report(2000), stamp);
    cache.addGzip('b', old, Buffer.alloc(10));
    expect(cache.report('b')?.gzip).toBeUndefined();
  });
});

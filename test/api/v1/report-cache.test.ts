import { describe, expect, it } from 'vitest';
import { ReportCache } from '../../../src/api/v1/report-cache.js';

describe('ReportCache', () => {
  it('returns a report only for the generation it was built at', () => {
    const cache = new ReportCache();
    cache.set('layer', 7, '{"Layer":1}');
    expect(cache.get('layer', 7)?.body).toBe('{"Layer":1}');
    expect(cache.get('layer', 8)?.body).toBeUndefined();
    // A stale entry is dropped, not revived by the old generation.
    expect(cache.get('layer', 7)?.body).toBeUndefined();
  });

  it('expires reports after five minutes even without a new generation', () => {
    const cache = new ReportCache();
    cache.set('layer', 1, 'x', 0);
    expect(cache.get('layer', 1, 5 * 60_000)?.body).toBe('x');
    expect(cache.get('layer', 1, 5 * 60_000 + 1)?.body).toBeUndefined();
  });

  it('stays within its memory bound, evicting the least recently used first', () => {
    const cache = new ReportCache(4000); // bytes: two-byte characters, so 2000 characters
    cache.set('a', 1, 'a'.repeat(500));
    cache.set('b', 1, 'b'.repeat(500));
    expect(cache.get('a', 1)?.body).toBeDefined(); // a is now the most recently used
    cache.set('c', 1, 'c'.repeat(500));
    cache.set('d', 1, 'd'.repeat(500));
    cache.set('e', 1, 'e'.repeat(500));
    expect(cache.get('b', 1)?.body).toBeUndefined();
    expect(cache.get('a', 1)?.body).toBeDefined();
    expect(cache.get('e', 1)?.body).toBeDefined();
  });

  it('does not keep a report larger than a quarter of its bound', () => {
    const cache = new ReportCache(4000);
    cache.set('huge', 1, 'x'.repeat(600));
    expect(cache.get('huge', 1)?.body).toBeUndefined();
  });
});

describe('ReportCache gzip forms', () => {
  it('keeps a gzip form with the entry it belongs to, and counts it against the bound', () => {
    const cache = new ReportCache(10_000);
    const entry = cache.set('a', 1, 'x'.repeat(1000))!;
    cache.addGzip('a', entry, Buffer.alloc(5000));
    expect(cache.get('a', 1)?.gzip?.length).toBe(5000);
    // 2000 + 5000 bytes used: two more 2000-byte reports (11000 > 10000) push the oldest (a) out.
    cache.set('b', 1, 'y'.repeat(1000));
    cache.set('c', 1, 'z'.repeat(1000));
    expect(cache.get('a', 1)).toBeUndefined();
    // A gzip form computed for an entry that has since been replaced is not attached to the new one.
    const old = cache.set('b', 2, 'y'.repeat(1000))!;
    cache.set('b', 3, 'w'.repeat(1000));
    cache.addGzip('b', old, Buffer.alloc(10));
    expect(cache.get('b', 3)?.gzip).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { ReportCache } from '../../../src/api/v1/report-cache.js';

describe('ReportCache', () => {
  it('returns a report only for the generation it was built at', () => {
    const cache = new ReportCache();
    cache.set('layer', 7, '{"Layer":1}');
    expect(cache.get('layer', 7)).toBe('{"Layer":1}');
    expect(cache.get('layer', 8)).toBeUndefined();
    // A stale entry is dropped, not revived by the old generation.
    expect(cache.get('layer', 7)).toBeUndefined();
  });

  it('expires reports after five minutes even without a new generation', () => {
    const cache = new ReportCache();
    cache.set('layer', 1, 'x', 0);
    expect(cache.get('layer', 1, 5 * 60_000)).toBe('x');
    expect(cache.get('layer', 1, 5 * 60_000 + 1)).toBeUndefined();
  });

  it('stays within its memory bound, evicting the least recently used first', () => {
    const cache = new ReportCache(4000); // bytes: two-byte characters, so 2000 characters
    cache.set('a', 1, 'a'.repeat(500));
    cache.set('b', 1, 'b'.repeat(500));
    expect(cache.get('a', 1)).toBeDefined(); // a is now the most recently used
    cache.set('c', 1, 'c'.repeat(500));
    cache.set('d', 1, 'd'.repeat(500));
    cache.set('e', 1, 'e'.repeat(500));
    expect(cache.get('b', 1)).toBeUndefined();
    expect(cache.get('a', 1)).toBeDefined();
    expect(cache.get('e', 1)).toBeDefined();
  });

  it('does not keep a report larger than a quarter of its bound', () => {
    const cache = new ReportCache(4000);
    cache.set('huge', 1, 'x'.repeat(600));
    expect(cache.get('huge', 1)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { rpm } from '../../src/ecosystems/rpm/version.js';
import { stateArches } from '../../src/ecosystems/oval/states.js';
import { decides, unionOfFixes } from '../../src/model/fixes.js';
import type { FixedIn } from '../../src/model/vulnerability.js';

const union = (...entries: FixedIn[]) => unionOfFixes(rpm.compare, entries);

describe('unionOfFixes: several entries of one package, under the same conditions', () => {
  it('keeps the highest of overlapping fixes, in any order', () => {
    const low = { feature: 'p', version: '1.20.10-4.azl3' };
    const high = { feature: 'p', version: '1.20.10-6.azl3' };
    expect(union(low, high)).toEqual([high]);
    expect(union(high, low)).toEqual([high]);
  });

  it('keeps no fix over a fix, and the state that reports more between two unfixed entries', () => {
    expect(union({ feature: 'p', version: '1-1' }, { feature: 'p', version: null })).toEqual([{ feature: 'p', version: null }]);
    expect(union({ feature: 'p', version: null, state: 'will_not_fix' }, { feature: 'p', version: null })).toEqual([
      { feature: 'p', version: null },
    ]);
    expect(union({ feature: 'p', version: null, state: 'fix_deferred' }, { feature: 'p', version: null, state: 'will_not_fix' })).toEqual([
      { feature: 'p', version: null, state: 'will_not_fix' },
    ]);
  });

  it('compares an inclusive bound with a fix: the one that reaches further', () => {
    const through = { feature: 'p', version: null, affectedThrough: '0.40.0-3' };
    expect(union({ feature: 'p', version: '0.36.0-3' }, through)).toEqual([through]);
    expect(union({ feature: 'p', version: '0.40.0-3' }, through)).toEqual([through]);
    expect(union({ feature: 'p', version: '0.41.0-1' }, through)).toEqual([{ feature: 'p', version: '0.41.0-1' }]);
  });

  it('drops a not_affected entry beside others of its package, and keeps it alone', () => {
    expect(union({ feature: 'p', version: null, state: 'not_affected' }, { feature: 'p', version: '1-1' })).toEqual([
      { feature: 'p', version: '1-1' },
    ]);
    expect(union({ feature: 'p', version: null, state: 'not_affected', arches: ['x86_64'] })).toEqual([
      { feature: 'p', version: null, state: 'not_affected' },
    ]);
  });
});

describe('unionOfFixes: entries under different conditions', () => {
  it('keeps one entry per architecture set and lower bound, and makes entries that differ only in architectures one', () => {
    expect(
      union(
        { feature: 'q', version: '1-1' },
        { feature: 'p', version: '2-1', arches: ['x86_64'] },
        { feature: 'p', version: '2-1', arches: ['aarch64'] },
        { feature: 'p', version: '2-3', arches: ['s390x'] },
        { feature: 'p', version: '2-0', arches: ['x86_64'] },
        { feature: 'r', version: '5-1', affectedAbove: '4' },
        { feature: 'r', version: '3-1' },
      ),
    ).toEqual([
      { feature: 'p', version: '2-1', arches: ['aarch64', 'x86_64'] },
      { feature: 'p', version: '2-3', arches: ['s390x'] },
      { feature: 'q', version: '1-1' },
      { feature: 'r', version: '3-1' },
      { feature: 'r', version: '5-1', affectedAbove: '4' },
    ]);
  });

  it('keeps ranges with different starts apart (minimist: [0, 0.2.1) and [1.0.0, 1.2.2)), and merges two of one start', () => {
    expect(
      union(
        { feature: 'm', version: '1.2.2', affectedFrom: '1.0.0' },
        { feature: 'm', version: '0.2.1' },
        { feature: 'm', version: '1.2.1', affectedFrom: '1.0.0' },
      ),
    ).toEqual([
      { feature: 'm', version: '0.2.1' },
      { feature: 'm', version: '1.2.2', affectedFrom: '1.0.0' },
    ]);
  });

  it('an entry for every architecture absorbs the architectures of one with the same reach; a fix drops an upper bound', () => {
    expect(union({ feature: 'p', version: '1-1', arches: ['x86_64'] }, { feature: 'p', version: '1-1' })).toEqual([
      { feature: 'p', version: '1-1' },
    ]);
    expect(union({ feature: 'p', version: '1-1', arches: [], affectedThrough: '9' })).toEqual([{ feature: 'p', version: '1-1' }]);
  });
});

describe('decides', () => {
  it('no fix over a fix, the higher fix, the state that reports more', () => {
    expect(decides(rpm.compare, { version: null }, { version: '9-1' })).toBe(true);
    expect(decides(rpm.compare, { version: '9-1' }, { version: null })).toBe(false);
    expect(decides(rpm.compare, { version: '1.10-1' }, { version: '1.9-1' })).toBe(true);
    expect(decides(rpm.compare, { version: '1.9-1' }, { version: '1.10-1' })).toBe(false);
    expect(decides(rpm.compare, { version: null, state: null }, { version: null, state: 'will_not_fix' })).toBe(true);
    expect(decides(rpm.compare, { version: null, state: 'fix_deferred' }, { version: null })).toBe(false);
  });
});

describe('stateArches', () => {
  it("reads Red Hat's and SUSE's patterns of names, and an equals", () => {
    expect(stateArches({ value: 'aarch64|ppc64le|s390x|x86_64', operation: 'pattern match' })).toEqual([
      'aarch64',
      'ppc64le',
      's390x',
      'x86_64',
    ]);
    expect(stateArches({ value: '(x86_64|aarch64)', operation: 'pattern match' })).toEqual(['aarch64', 'x86_64']);
    expect(stateArches({ value: '^noarch$', operation: 'pattern match' })).toEqual(['noarch']);
    expect(stateArches({ value: 'i686', operation: 'equals' })).toEqual(['i686']);
  });

  it('narrows nothing for no arch, a pattern that is more than names, or another operation', () => {
    expect(stateArches(null)).toBeUndefined();
    expect(stateArches({ value: 'x86_.*', operation: 'pattern match' })).toBeUndefined();
    expect(stateArches({ value: 'x86_64', operation: 'not equal' })).toBeUndefined();
    expect(stateArches({ value: 'a|', operation: 'pattern match' })).toBeUndefined();
  });
});

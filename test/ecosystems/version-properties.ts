import { expect } from 'vitest';
import { prng } from '../helpers/prng.js';

/**
 * Pieces of version strings, valid and not: runs of zeros and digits beyond
 * 2^64, every separator the formats treat specially, suffix names, white
 * space (ASCII and not), non-ASCII letters, a surrogate pair and lone
 * surrogates. Comparators read these by index, so ranges and bounds are what
 * can go wrong.
 */
const PIECES = [
  '0',
  '00',
  '1',
  '01',
  '9',
  '10',
  '007',
  '18446744073709551616',
  '18446744073709551615',
  'a',
  'z',
  'A',
  'r',
  'rc',
  'p',
  'alpha',
  'git',
  'c0ffee',
  'el8_5',
  'ubuntu',
  '.',
  '-',
  '-r',
  ':',
  '~',
  '^',
  '+',
  '_',
  ' ',
  '\t',
  '\u00a0',
  '\u2028',
  '!',
  '\u00e9',
  '\u{1F600}',
  '\ud800',
  '\udfff',
];

/**
 * count strings, the same ones for the same seed. Each starts with a random
 * cut of the one before, so that neighbours often share a prefix and differ
 * late, where comparisons do most of their work.
 */
export function junkVersions(seed: number, count: number): string[] {
  const random = prng(seed);
  const versions: string[] = [];
  let previous = '';
  for (let n = 0; n < count; n++) {
    let s = previous.slice(0, Math.floor(random() * (previous.length + 1)));
    const pieces = Math.floor(random() * 5);
    for (let i = 0; i < pieces; i++) s += PIECES[Math.floor(random() * PIECES.length)];
    versions.push(s);
    previous = s;
  }
  return versions;
}

/**
 * compare(a, b) === -compare(b, a) for neighbouring versions, valid or not:
 * the matcher sorts versions it has not validated, and an index slip in one
 * direction only shows up here.
 */
export function expectAntisymmetric(compare: (a: string, b: string) => -1 | 0 | 1, versions: readonly string[]): void {
  const broken: string[] = [];
  for (let i = 0; i + 1 < versions.length; i++) {
    const a = versions[i] as string;
    const b = versions[i + 1] as string;
    if (compare(a, b) !== -compare(b, a)) broken.push(`${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
  expect(broken).toEqual([]);
}

/**
 * compare is a total order on versions, valid or not: sorted with it, no version compares after
 * one sorted later. A comparator that is not transitive (or not antisymmetric) leaves pairs out
 * of order here, which neighbouring pairs alone would not show. Every pair is compared, so keep
 * the list to a few hundred.
 */
export function expectTotalOrder(compare: (a: string, b: string) => -1 | 0 | 1, versions: readonly string[]): void {
  const sorted = [...versions].sort(compare);
  const broken: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length; j++) {
      const a = sorted[i] as string;
      const b = sorted[j] as string;
      if (compare(a, b) > 0 || compare(b, a) < 0) broken.push(`${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    }
  }
  expect(broken).toEqual([]);
}

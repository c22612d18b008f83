import type { VersionFormat } from '../../model/version-format.js';
import { compareDigitRuns, compareText, hasValidEpoch, isAsciiLetter, isDigit, skipDigits, splitEpoch } from '../version-text.js';

/**
 * RPM version ordering: `[epoch:]version[-release]`, epoch compared
 * numerically (missing = 0), then rpmvercmp on version, then on release.
 */

export interface RpmEvr {
  /** The epoch's digits as written ('0' when absent); rpm puts no bound on them here. */
  readonly epoch: string;
  readonly version: string;
  readonly release: string;
}

/**
 * Clair's rpm charset (digits, letters, `. - + ~ : _`) plus `^`, which rpm
 * accepts in versions since 4.15 and orders below.
 */
const VERSION_CHARS = /^[0-9A-Za-z.+~:_^-]+$/;
const RELEASE_CHARS = /^[0-9A-Za-z.+~:_^-]*$/;

const CH_TILDE = 0x7e;
const CH_CARET = 0x5e;

/**
 * Splits without validating: epoch before the first ':' (only when it is all
 * digits, so junk still orders deterministically), release after the FIRST
 * '-' (unlike dpkg, which splits at the last one).
 */
function split(v: string): RpmEvr {
  const { epoch, rest } = splitEpoch(v.trim());
  const hyphen = rest.indexOf('-');
  if (hyphen < 0) return { epoch, version: rest, release: '' };
  return { epoch, version: rest.slice(0, hyphen), release: rest.slice(hyphen + 1) };
}

/** Parses `[epoch:]version[-release]`, or returns null when it is not one. */
export function parseRpmEvr(v: string): RpmEvr | null {
  const s = v.trim();
  if (!hasValidEpoch(s)) return null;
  const evr = split(s);
  if (!VERSION_CHARS.test(evr.version) || !RELEASE_CHARS.test(evr.release)) return null;
  return evr;
}

function compare(a: string, b: string): -1 | 0 | 1 {
  if (a === b) return 0;
  const x = split(a);
  const y = split(b);
  // Releases are compared even when one side has none: rpm's own tests
  // expect `1.0 > 1.0-~` and `1.0 < 1.0-1~`.
  return compareEpoch(x.epoch, y.epoch) || rpmvercmp(x.version, y.version) || rpmvercmp(x.release, y.release);
}

function valid(v: string): boolean {
  return parseRpmEvr(v) !== null;
}

export const rpm = { name: 'rpm', compare, valid } satisfies VersionFormat;

/**
 * rpm's segment comparison (rpmio/rpmvercmp, rpm >= 4.15). Both strings are
 * cut into maximal runs of ASCII digits or ASCII letters; everything else,
 * non-ASCII included, only separates runs. Then, segment by segment:
 * - '~' sorts before anything, even the end (`1.0~rc1 < 1.0`);
 * - '^' sorts after the end but before anything else (`1.0 < 1.0^git1 < 1.0.1`);
 * - a numeric segment is newer than an alphabetic one;
 * - numbers compare by value (leading zeros ignored), letters by ASCII.
 * When one string runs out, the one with segments left is newer.
 */
export function rpmvercmp(a: string, b: string): -1 | 0 | 1 {
  if (a === b) return 0;
  let i = 0;
  let j = 0;
  for (;;) {
    i = skipSeparators(a, i);
    j = skipSeparators(b, j);
    const x = a.charCodeAt(i); // NaN past the end
    const y = b.charCodeAt(j);
    if (x === CH_TILDE || y === CH_TILDE) {
      if (x !== y) return x === CH_TILDE ? -1 : 1;
    } else if (x === CH_CARET || y === CH_CARET) {
      if (i >= a.length) return -1;
      if (j >= b.length) return 1;
      if (x !== y) return x === CH_CARET ? -1 : 1;
    } else if (i >= a.length || j >= b.length) {
      return i < a.length ? 1 : j < b.length ? -1 : 0;
    } else {
      const numeric = isDigit(x);
      const endA = numeric ? skipDigits(a, i) : skipLetters(a, i);
      const endB = numeric ? skipDigits(b, j) : skipLetters(b, j);
      // b's segment is of the other kind: numbers beat letters.
      if (endB === j) return numeric ? 1 : -1;
      const c = numeric ? compareDigitRuns(a, i, endA, b, j, endB) : compareText(a, i, endA, b, j, endB);
      if (c !== 0) return c;
      i = endA;
      j = endB;
      continue;
    }
    // Both sides hold the same '~' or '^': step over it.
    i++;
    j++;
  }
}

/** Epochs are digit strings; compare them by value, any length. */
function compareEpoch(a: string, b: string): -1 | 0 | 1 {
  return compareDigitRuns(a, 0, a.length, b, 0, b.length);
}

function skipSeparators(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (isDigit(c) || isAsciiLetter(c) || c === CH_TILDE || c === CH_CARET) break;
    i++;
  }
  return i;
}

function skipLetters(s: string, i: number): number {
  while (i < s.length && isAsciiLetter(s.charCodeAt(i))) i++;
  return i;
}

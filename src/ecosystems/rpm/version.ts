import type { VersionFormat } from '../../model/version-format.js';
import { type EvrSyntax, compareEvr, isAsciiLetter, isDigit, isJsSpace, lastHyphen, parseEvr, validEvr } from '../version-text.js';

/**
 * RPM version ordering: `[epoch:]version[-release]`, the release being what
 * follows the last hyphen; epoch compared numerically (missing = 0), then
 * rpmvercmp on version, then on release.
 *
 * Comparison works on index ranges of the original strings: it runs once per
 * installed package and candidate vulnerability, so it allocates nothing.
 */

export interface RpmEvr {
  /** The epoch's digits as written ('0' when absent); rpm puts no bound on them here. */
  readonly epoch: string;
  readonly version: string;
  readonly release: string;
}

const CH_0 = 0x30;
const CH_TILDE = 0x7e;
const CH_CARET = 0x5e;
/** Stands for the character past the end of a range, which no real character equals. */
const END = -1;

const RPM_SYNTAX: EvrSyntax = {
  isSpace: isJsSpace,
  // As rpm's own parseEVR: `1.2-3-4` is version `1.2-3`, release `4`.
  releaseHyphen: lastHyphen,
  isVersionChar: isEvrChar,
  isReleaseChar: isEvrChar,
  // Here rpm puts no bound on epochs.
  maxEpoch: null,
};

/** Parses `[epoch:]version[-release]`, or returns null when it is not one. */
export function parseRpmEvr(v: string): RpmEvr | null {
  const parts = parseEvr(RPM_SYNTAX, v);
  if (parts === null) return null;
  return { epoch: parts.epoch === '' ? '0' : parts.epoch, version: parts.version, release: parts.release };
}

function compare(a: string, b: string): -1 | 0 | 1 {
  return a === b ? 0 : compareEvr(RPM_SYNTAX, compareSegments, a, b);
}

function valid(v: string): boolean {
  return validEvr(RPM_SYNTAX, v);
}

/** Revision 2: the release follows the last hyphen, not the first. */
export const rpm = { name: 'rpm', compare, valid, revision: 2 } satisfies VersionFormat;

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
  return a === b ? 0 : compareSegments(a, 0, a.length, b, 0, b.length);
}

/** rpmvercmp on a[i, endA) and b[j, endB). */
function compareSegments(a: string, i: number, endA: number, b: string, j: number, endB: number): -1 | 0 | 1 {
  for (;;) {
    let x = END;
    for (; i < endA; i++) {
      const c = a.charCodeAt(i);
      if (startsSegment(c)) {
        x = c;
        break;
      }
    }
    let y = END;
    for (; j < endB; j++) {
      const c = b.charCodeAt(j);
      if (startsSegment(c)) {
        y = c;
        break;
      }
    }
    if (x === CH_TILDE || y === CH_TILDE) {
      if (x !== y) return x === CH_TILDE ? -1 : 1;
    } else if (x === CH_CARET || y === CH_CARET) {
      if (x === END) return -1;
      if (y === END) return 1;
      if (x !== y) return x === CH_CARET ? -1 : 1;
    } else if (x === END || y === END) {
      return x !== END ? 1 : y !== END ? -1 : 0;
    } else if (isDigit(x)) {
      // b's segment is of the other kind: numbers beat letters.
      if (!isDigit(y)) return 1;
      // By value: leading zeros dropped, then the longer run is larger,
      // else the first differing digit decides.
      while (i < endA && a.charCodeAt(i) === CH_0) i++;
      while (j < endB && b.charCodeAt(j) === CH_0) j++;
      let firstDifference: -1 | 0 | 1 = 0;
      for (; ; i++, j++) {
        const p = i < endA ? a.charCodeAt(i) : END;
        const q = j < endB ? b.charCodeAt(j) : END;
        if (!isDigit(p) || !isDigit(q)) {
          if (isDigit(p)) return 1;
          if (isDigit(q)) return -1;
          break;
        }
        if (firstDifference === 0 && p !== q) firstDifference = p < q ? -1 : 1;
      }
      if (firstDifference !== 0) return firstDifference;
      continue;
    } else {
      if (isDigit(y)) return -1;
      // As strings: the first differing letter decides, else the longer run.
      for (; ; i++, j++) {
        const p = i < endA ? a.charCodeAt(i) : END;
        const q = j < endB ? b.charCodeAt(j) : END;
        if (!isAsciiLetter(p) || !isAsciiLetter(q)) {
          if (isAsciiLetter(p)) return 1;
          if (isAsciiLetter(q)) return -1;
          break;
        }
        if (p !== q) return p < q ? -1 : 1;
      }
      continue;
    }
    // Both sides hold the same '~' or '^': step over it.
    i++;
    j++;
  }
}

function startsSegment(c: number): boolean {
  return isDigit(c) || isAsciiLetter(c) || c === CH_TILDE || c === CH_CARET;
}

/**
 * Clair's rpm charset (digits, letters, `. - + ~ : _`) plus `^`, which rpm
 * accepts in versions since 4.15 and orders below.
 */
function isEvrChar(c: number): boolean {
  return (
    isDigit(c) || isAsciiLetter(c) || c === 0x2e || c === 0x2d || c === 0x2b || c === CH_TILDE || c === 0x3a || c === 0x5f || c === CH_CARET
  );
}

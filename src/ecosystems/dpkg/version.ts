import type { VersionFormat } from '../../model/version-format.js';
import { type EvrSyntax, compareEvr, isAsciiLetter, isAsciiSpace, isDigit, lastHyphen, parseEvr, validEvr } from '../version-text.js';

/**
 * Debian version ordering (Debian Policy §5.6.12, dpkg's verrevcmp):
 * `[epoch:]upstream[-revision]`, epoch compared numerically, then upstream
 * and revision with the alternating non-digit / digit comparison below.
 *
 * Comparison works on index ranges of the original strings: it runs once per
 * installed package and candidate vulnerability, so it allocates nothing.
 */

export interface DpkgVersion {
  readonly epoch: number;
  readonly upstream: string;
  readonly revision: string;
}

const CH_0 = 0x30;
const CH_TILDE = 0x7e;
/** Stands for the character past the end of a range: no digit, no character. */
const NO_CHAR = -1;

const DPKG_SYNTAX: EvrSyntax = {
  // dpkg trims with C isspace (ASCII only), not Unicode white space.
  isSpace: isAsciiSpace,
  releaseHyphen: lastHyphen,
  isVersionChar: isUpstreamChar,
  isReleaseChar: isRevisionChar,
  // dpkg refuses epochs that do not fit a C int ("epoch in version is too big").
  maxEpoch: '2147483647',
};

/**
 * Parses a Debian version, or returns null when dpkg (as tested by Clair's
 * parse table) would reject it. One deliberate leniency: an empty revision
 * (`0:0-`) is accepted, as Clair's table requires, although dpkg refuses it.
 */
export function parseDpkgVersion(v: string): DpkgVersion | null {
  const parts = parseEvr(DPKG_SYNTAX, v);
  if (parts === null) return null;
  return { epoch: parts.epoch === '' ? 0 : Number(parts.epoch), upstream: parts.version, revision: parts.release };
}

function compare(a: string, b: string): -1 | 0 | 1 {
  return a === b ? 0 : compareEvr(DPKG_SYNTAX, verrevcmp, a, b);
}

function valid(v: string): boolean {
  return validEvr(DPKG_SYNTAX, v);
}

export const dpkg = { name: 'dpkg', compare, valid, revision: 1 } satisfies VersionFormat;

/**
 * Compares two upstream versions (or two revisions): alternately the leading
 * non-digit parts, character by character, then the leading digit runs by
 * numeric value, until one side differs or both are exhausted.
 */
function verrevcmp(a: string, i: number, endA: number, b: string, j: number, endB: number): -1 | 0 | 1 {
  while (i < endA || j < endB) {
    // The non-digit parts. Past its end a part reads as '0', since the end
    // weighs what a digit does; two different characters weigh differently
    // unless both are digits, so equal characters need no weighing.
    for (;;) {
      const x = i < endA ? a.charCodeAt(i) : CH_0;
      const y = j < endB ? b.charCodeAt(j) : CH_0;
      if (x !== y) {
        const byWeight = lexicalWeight(x) - lexicalWeight(y);
        if (byWeight !== 0) return byWeight < 0 ? -1 : 1;
      }
      if (isDigit(x)) break;
      i++;
      j++;
    }
    // The digit runs (possibly empty), by value: leading zeros dropped, then
    // the longer run is larger, else the first differing digit decides.
    while (i < endA && a.charCodeAt(i) === CH_0) i++;
    while (j < endB && b.charCodeAt(j) === CH_0) j++;
    let firstDifference: -1 | 0 | 1 = 0;
    for (;;) {
      const x = i < endA ? a.charCodeAt(i) : NO_CHAR;
      const y = j < endB ? b.charCodeAt(j) : NO_CHAR;
      if (!isDigit(x) || !isDigit(y)) {
        if (isDigit(x)) return 1;
        if (isDigit(y)) return -1;
        break;
      }
      if (firstDifference === 0 && x !== y) firstDifference = x < y ? -1 : 1;
      i++;
      j++;
    }
    if (firstDifference !== 0) return firstDifference;
  }
  return 0;
}

/**
 * Weight of a character within a non-digit part. '~' sorts before
 * everything, even the end of the part (so `1.0~rc1 < 1.0`); the end and a
 * digit weigh 0; letters sort before all other characters (`1.0a < 1.0+`).
 */
function lexicalWeight(c: number): number {
  if (c === CH_TILDE) return -1;
  if (isDigit(c)) return 0;
  if (isAsciiLetter(c)) return c;
  return c + 256;
}

/** Clair's upstream charset: digits, letters and `. + ~ : _ -`. */
function isUpstreamChar(c: number): boolean {
  return isRevisionChar(c) || c === 0x3a || c === 0x2d;
}

/** Clair's revision charset: digits, letters and `. + ~ _`. */
function isRevisionChar(c: number): boolean {
  return isDigit(c) || isAsciiLetter(c) || c === 0x2e || c === 0x2b || c === CH_TILDE || c === 0x5f;
}

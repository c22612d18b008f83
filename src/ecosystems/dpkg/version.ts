import type { VersionFormat } from '../../model/version-format.js';
import { compareDigitRuns, hasValidEpoch, isAsciiLetter, isDigit, skipDigits, splitEpoch } from '../version-text.js';

/**
 * Debian version ordering (Debian Policy §5.6.12, dpkg's verrevcmp):
 * `[epoch:]upstream[-revision]`, epoch compared numerically, then upstream
 * and revision with the alternating non-digit / digit comparison below.
 */

export interface DpkgVersion {
  readonly epoch: number;
  readonly upstream: string;
  readonly revision: string;
}

/** dpkg refuses epochs that do not fit a C int ("epoch in version is too big"). */
const MAX_EPOCH = 2_147_483_647;
const UPSTREAM_CHARS = /^[0-9A-Za-z.+~:_-]+$/;
const REVISION_CHARS = /^[0-9A-Za-z.+~_]*$/;

const CH_TILDE = 0x7e;

interface Parts {
  readonly epoch: string;
  readonly upstream: string;
  readonly revision: string;
}

/**
 * Splits without validating: epoch before the first ':' (only when it is all
 * digits, so junk still orders deterministically), revision after the last '-'.
 */
function split(v: string): Parts {
  const { epoch, rest } = splitEpoch(trimAsciiSpace(v));
  const hyphen = rest.lastIndexOf('-');
  if (hyphen < 0) return { epoch, upstream: rest, revision: '' };
  return { epoch, upstream: rest.slice(0, hyphen), revision: rest.slice(hyphen + 1) };
}

/**
 * Parses a Debian version, or returns null when dpkg (as tested by Clair's
 * parse table) would reject it. One deliberate leniency: an empty revision
 * (`0:0-`) is accepted, as Clair's table requires, although dpkg refuses it.
 */
export function parseDpkgVersion(v: string): DpkgVersion | null {
  const s = trimAsciiSpace(v);
  if (!hasValidEpoch(s)) return null;
  const { epoch, upstream, revision } = split(s);
  const epochValue = Number(epoch);
  if (epochValue > MAX_EPOCH) return null;
  if (!UPSTREAM_CHARS.test(upstream) || !REVISION_CHARS.test(revision)) return null;
  return { epoch: epochValue, upstream, revision };
}

function compare(a: string, b: string): -1 | 0 | 1 {
  if (a === b) return 0;
  const x = split(a);
  const y = split(b);
  return (
    compareDigitRuns(x.epoch, 0, x.epoch.length, y.epoch, 0, y.epoch.length) ||
    verrevcmp(x.upstream, y.upstream) ||
    verrevcmp(x.revision, y.revision)
  );
}

function valid(v: string): boolean {
  return parseDpkgVersion(v) !== null;
}

export const dpkg = { name: 'dpkg', compare, valid } satisfies VersionFormat;

/**
 * Compares two upstream versions (or two revisions): alternately the leading
 * non-digit parts, character by character, then the leading digit runs by
 * numeric value, until one side differs or both are exhausted.
 */
function verrevcmp(a: string, b: string): -1 | 0 | 1 {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    while ((i < a.length && !isDigit(a.charCodeAt(i))) || (j < b.length && !isDigit(b.charCodeAt(j)))) {
      const x = lexicalWeight(a, i);
      const y = lexicalWeight(b, j);
      if (x !== y) return x < y ? -1 : 1;
      // Equal weights here mean both are the same non-digit character.
      i++;
      j++;
    }
    const endA = skipDigits(a, i);
    const endB = skipDigits(b, j);
    const c = compareDigitRuns(a, i, endA, b, j, endB);
    if (c !== 0) return c;
    i = endA;
    j = endB;
  }
  return 0;
}

/**
 * Weight of the character at i within a non-digit part. '~' sorts before
 * everything, even the end of the part (so `1.0~rc1 < 1.0`); the end and a
 * digit weigh 0; letters sort before all other characters (`1.0a < 1.0+`).
 */
function lexicalWeight(s: string, i: number): number {
  if (i >= s.length) return 0;
  const c = s.charCodeAt(i);
  if (c === CH_TILDE) return -1;
  if (isDigit(c)) return 0;
  if (isAsciiLetter(c)) return c;
  return c + 256;
}

/** dpkg trims with C isspace (ASCII only), not Unicode whitespace. */
function trimAsciiSpace(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isAsciiSpace(s.charCodeAt(start))) start++;
  while (end > start && isAsciiSpace(s.charCodeAt(end - 1))) end--;
  return start === 0 && end === s.length ? s : s.slice(start, end);
}

function isAsciiSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

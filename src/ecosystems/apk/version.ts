import type { VersionFormat } from '../../model/version-format.js';
import { compareDigitRuns, compareText, compareUtf8, isDigit } from '../version-text.js';

/**
 * apk-tools (v3) version ordering, a Gentoo-like scheme:
 *
 *   digits{.digits}[letter]{_suffix[digits]}[~commithash][-rN]
 *
 * Both versions are read token by token, left to right, and compared
 * pairwise while the token kinds match. The first difference decides.
 */

/**
 * Token kinds. The numeric order matters twice: it is the order the grammar
 * allows them in (so "may X follow Y" is mostly a comparison), and when two
 * versions agree up to a point where the kinds differ, the version whose next
 * token comes earlier in this list is the greater one (`1.0.1 > 1.0a > 1.0_p1
 * > 1.0~c0ffee > 1.0-r1 > 1.0`), except for pre-release suffixes. (No
 * apk-tools vector pits a commit hash against another kind; its place here
 * follows its place in the grammar.)
 */
const DIGIT = 0;
const LETTER = 1;
const SUFFIX = 2;
const SUFFIX_NUMBER = 3;
const COMMIT_HASH = 4;
const REVISION = 5;
const END = 6;
const INVALID = 7;
type TokenKind = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7;

/**
 * Suffix names and their ranks, side by side: pre-releases are negative, so
 * `1.0_rc1 < 1.0 < 1.0_p1`. Looked up by comparing ranges in place, without
 * cutting the name out of the version.
 */
const SUFFIX_NAMES: readonly string[] = ['alpha', 'beta', 'pre', 'rc', 'cvs', 'svn', 'git', 'hg', 'p'];
const SUFFIX_RANKS: readonly number[] = [-4, -3, -2, -1, 1, 2, 3, 4, 5];
const NOT_A_SUFFIX = 0;

const CH_0 = 0x30;
const CH_A = 0x61;
const CH_F = 0x66;
const CH_Z = 0x7a;
const CH_DOT = 0x2e;
const CH_UNDERSCORE = 0x5f;
const CH_TILDE = 0x7e;
const CH_HYPHEN = 0x2d;
const CH_R = 0x72;

/** A position in a version string and the token that ends there. */
interface Cursor {
  s: string;
  kind: TokenKind;
  /** Token value is s[start, end): the digits, the letter, the suffix name or the hash. */
  start: number;
  end: number;
  /** Rank of the suffix when kind is SUFFIX. */
  rank: number;
}

/**
 * The two cursors every comparison (and validation) reuses. Comparisons run
 * once per installed package and candidate vulnerability, and never re-enter
 * each other (nothing here calls out), so one pair serves them all without
 * allocating per call.
 */
const left: Cursor = { s: '', kind: INVALID, start: 0, end: 0, rank: 0 };
const right: Cursor = { s: '', kind: INVALID, start: 0, end: 0, rank: 0 };

/** Puts c on the first token of s, which must be the leading number. */
function reset(c: Cursor, s: string): Cursor {
  c.s = s;
  c.rank = 0;
  readDigits(c, 0, DIGIT);
  return c;
}

/**
 * Moves c past its token (of a kind before END) to the next one, or to
 * INVALID where the grammar is broken.
 */
function advance(c: Cursor): void {
  const s = c.s;
  const i = c.end;
  if (i >= s.length) {
    c.kind = END;
    return;
  }
  const ch = s.charCodeAt(i);
  if (ch === CH_DOT && c.kind === DIGIT) readDigits(c, i + 1, DIGIT);
  else if (isLowerLetter(ch) && c.kind === DIGIT) setToken(c, LETTER, i, i + 1);
  else if (ch === CH_UNDERSCORE && c.kind <= SUFFIX_NUMBER) readSuffix(c, i + 1);
  else if (isDigit(ch) && c.kind === SUFFIX) readDigits(c, i, SUFFIX_NUMBER);
  else if (ch === CH_TILDE && c.kind <= SUFFIX_NUMBER) readHash(c, i + 1);
  else if (ch === CH_HYPHEN && c.kind <= COMMIT_HASH && s.charCodeAt(i + 1) === CH_R) readDigits(c, i + 2, REVISION);
  else setToken(c, INVALID, i, i);
}

function readDigits(c: Cursor, i: number, kind: TokenKind): void {
  let end = i;
  while (end < c.s.length && isDigit(c.s.charCodeAt(end))) end++;
  setToken(c, end > i ? kind : INVALID, i, end);
}

function readSuffix(c: Cursor, i: number): void {
  let end = i;
  while (end < c.s.length && isLowerLetter(c.s.charCodeAt(end))) end++;
  c.rank = suffixRank(c.s, i, end);
  setToken(c, c.rank === NOT_A_SUFFIX ? INVALID : SUFFIX, i, end);
}

function suffixRank(s: string, i: number, end: number): number {
  for (let k = 0; k < SUFFIX_NAMES.length; k++) {
    const name = SUFFIX_NAMES[k] as string;
    if (name.length === end - i && compareText(s, i, end, name, 0, name.length) === 0) return SUFFIX_RANKS[k] as number;
  }
  return NOT_A_SUFFIX;
}

function readHash(c: Cursor, i: number): void {
  let end = i;
  while (end < c.s.length && isHexDigit(c.s.charCodeAt(end))) end++;
  setToken(c, end > i ? COMMIT_HASH : INVALID, i, end);
}

function setToken(c: Cursor, kind: TokenKind, start: number, end: number): void {
  c.kind = kind;
  c.start = start;
  c.end = end;
}

/**
 * Compares the values of two tokens of the same kind.
 * The leading number always compares by value. A later dotted component
 * compares by value too, unless either side starts with '0': then both
 * compare as whole strings, character by character, a proper prefix first
 * (`8.2.0 < 8.2.001`, `8.2.0015 < 8.2.002`). No zero is dropped, so
 * `1.35.00 > 1.35.0` and `1.00 > 1.0_p10`, decided at the "00", as
 * apk-tools 3 orders them (apk-tools 2 weighed runs of zeros differently).
 * Suffix numbers and revisions compare by value, suffixes by rank, letters
 * and hashes as strings.
 */
function compareTokens(a: Cursor, b: Cursor, leading: boolean): -1 | 0 | 1 {
  switch (a.kind) {
    case DIGIT:
      if (!leading && (a.s.charCodeAt(a.start) === CH_0 || b.s.charCodeAt(b.start) === CH_0)) {
        return compareText(a.s, a.start, a.end, b.s, b.start, b.end);
      }
      return compareNumbers(a, b);
    case SUFFIX_NUMBER:
    case REVISION:
      return compareNumbers(a, b);
    case SUFFIX:
      return a.rank === b.rank ? 0 : a.rank < b.rank ? -1 : 1;
    default:
      return compareText(a.s, a.start, a.end, b.s, b.start, b.end);
  }
}

function compareWith(a: string, b: string, fuzzy: boolean): -1 | 0 | 1 {
  const x = reset(left, a);
  const y = reset(right, b);
  let leading = true;
  while (x.kind === y.kind && x.kind < END) {
    const c = compareTokens(x, y, leading);
    if (c !== 0) return c;
    leading = false;
    advance(x);
    advance(y);
  }
  // apk has no order for malformed versions: once either side stops parsing
  // before a difference was found, it falls back to comparing the raw
  // strings. Being lazy matters: `23_foo > 4_beta` is decided by 23 > 4
  // before the unknown suffix `_foo` is reached.
  if (x.kind === INVALID || y.kind === INVALID) return compareUtf8(a, b);
  if (x.kind === y.kind) return 0; // both ended
  // Fuzzy matching (`~`): b matches when it is a prefix of a, token-wise.
  if (fuzzy && y.kind === END) return 0;
  // A pre-release suffix makes the version older than one that stops or
  // goes on differently at that point (`1.0_rc1 < 1.0`, `_alpha_pre2 < _alpha`).
  if (x.kind === SUFFIX && x.rank < 0) return -1;
  if (y.kind === SUFFIX && y.rank < 0) return 1;
  return x.kind < y.kind ? 1 : -1;
}

function compare(a: string, b: string): -1 | 0 | 1 {
  return a === b ? 0 : compareWith(a, b, false);
}

function valid(v: string): boolean {
  const c = reset(left, v);
  while (c.kind < END) advance(c);
  return c.kind === END;
}

/** Revision 2: digit groups with a leading zero compare as whole strings (`1.00 > 1.0`). */
export const apk = { name: 'apk', compare, valid, revision: 2 } satisfies VersionFormat;

/**
 * apk's fuzzy comparison (the `~` dependency operator): 0 when every token of
 * b equals the token at the same place in a (`3.6.9 ~ 3.6`, `3.6_pre1 ~ 3.6`),
 * otherwise the ordinary order of a against b.
 */
export function apkFuzzyCompare(a: string, b: string): -1 | 0 | 1 {
  return a === b ? 0 : compareWith(a, b, true);
}

function compareNumbers(a: Cursor, b: Cursor): -1 | 0 | 1 {
  return compareDigitRuns(a.s, a.start, a.end, b.s, b.start, b.end);
}

function isLowerLetter(c: number): boolean {
  return c >= CH_A && c <= CH_Z;
}

function isHexDigit(c: number): boolean {
  return isDigit(c) || (c >= CH_A && c <= CH_F);
}

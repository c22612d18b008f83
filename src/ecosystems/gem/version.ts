import type { VersionFormat } from '../../model/version-format.js';
import { compareDigitRuns, compareText, unreadableFirst } from '../version-text.js';

/**
 * RubyGems' version ordering: `Gem::Version#<=>` and `Gem::Version.correct?` as
 * rubygems/rubygems lib/rubygems/version.rb has them (2025).
 *
 * Not @renovatebot/ruby-semver: its Version is a port of an older version.rb, from before
 * canonical_segments dropped zeros in the pre-release part too (RubyGems now has
 * `1.a.0.b` = `1.a.b`), and it compares letter segments with localeCompare (Ruby compares
 * bytes: `1.B` < `1.a`), numbers as doubles, and trims JavaScript's white space where
 * Ruby's `\s` is ASCII only. The rules are short enough to follow here exactly.
 */

/** ANCHORED_VERSION_PATTERN, with Ruby's `\s` (ASCII white space) spelled out. */
const CORRECT = /^[ \t\n\v\f\r]*(?:[0-9]+(?:\.[0-9a-zA-Z]+)*(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)?[ \t\n\v\f\r]*$/;

/** Trailing zeros (and dots) after a letter or a dot: `1.0.0` → `1.`, `1.a.0` → `1.a.`. */
const TRAILING_ZEROS = /(?<=[a-zA-Z.])[.0]+$/;
/** In a pre-release, the zeros right before the first letter run: `1.0.a` → `1.a`. */
const ZEROS_BEFORE_LETTERS = /(?<=\.|^)[0.]+(?=[a-zA-Z])/;
const SEGMENT = /[0-9]+|[a-zA-Z]+/g;
const LETTER = /[a-zA-Z]/;

/**
 * canonical_segments: the version as initialize stores it (stripped, `-` read as `.pre.`,
 * empty as `0`), zeros that do not count removed, then split into digit runs (numbers,
 * kept as digits so that any length compares exactly) and letter runs (strings).
 */
function canonicalSegments(v: string): string[] | null {
  if (!CORRECT.test(v)) return null;
  let version = v.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, '').replaceAll('-', '.pre.');
  if (version === '') version = '0';
  version = version.replace(TRAILING_ZEROS, '');
  if (LETTER.test(version)) version = version.replace(ZEROS_BEFORE_LETTERS, '');
  return version.match(SEGMENT) ?? [];
}

function isNumber(segment: string): boolean {
  const c = segment.charCodeAt(0);
  return c >= 0x30 && c <= 0x39;
}

function isZero(segment: string): boolean {
  return /^0+$/.test(segment);
}

/**
 * `<=>` on canonical segments: pairwise, a string sorts before a number, numbers by value,
 * strings by bytes. When one side runs out, the other's rest decides: a string there makes
 * it the smaller (`1.a` < `1`), a non-zero number the greater.
 */
function compareSegments(a: readonly string[], b: readonly string[]): -1 | 0 | 1 {
  const limit = Math.min(a.length, b.length);
  for (let i = 0; i < limit; i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    const xIsNumber = isNumber(x);
    if (xIsNumber !== isNumber(y)) return xIsNumber ? 1 : -1;
    const c = xIsNumber ? compareDigitRuns(x, 0, x.length, y, 0, y.length) : compareText(x, 0, x.length, y, 0, y.length);
    if (c !== 0) return c;
  }
  const longer = a.length > b.length ? a : b;
  const sign = longer === a ? 1 : -1;
  for (let i = limit; i < longer.length; i++) {
    const s = longer[i] as string;
    if (!isNumber(s)) return sign === 1 ? -1 : 1;
    if (!isZero(s)) return sign;
  }
  return 0;
}

/**
 * Malformed versions have no order in RubyGems: Gem::Version.new raises on them. They sort
 * before every correct version, then by code points (Ruby compares strings by their bytes,
 * which for UTF-8 is code-point order), so that a total order exists for the matcher.
 */
const compare = unreadableFirst(canonicalSegments, compareSegments);

/** Gem::Version.correct?: the empty string (version 0) included. */
function valid(v: string): boolean {
  return CORRECT.test(v);
}

export const gem = { name: 'gem', compare, valid, revision: 1 } satisfies VersionFormat;

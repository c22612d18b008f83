/**
 * Character-level helpers shared by the version comparators, and the
 * `[epoch:]version[-release]` layout that dpkg and rpm share. They work on
 * string ranges (s[i, end)) so that a comparison allocates nothing: no
 * slices, no regular expressions, no part objects. Matching runs for every
 * installed package against every fixed-in version, so garbage per
 * comparison adds up. Digit runs of any length compare exactly.
 */
const CH_0 = 0x30;
const CH_9 = 0x39;
const CH_COLON = 0x3a;
const CH_HYPHEN = 0x2d;

export function isDigit(c: number): boolean {
  return c >= CH_0 && c <= CH_9;
}

export function isAsciiLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

export function skipDigits(s: string, i: number, end: number): number {
  while (i < end && isDigit(s.charCodeAt(i))) i++;
  return i;
}

/** Compares two digit runs by value: leading zeros dropped, then by length, then digit by digit. */
export function compareDigitRuns(s: string, i: number, end: number, t: string, j: number, endT: number): -1 | 0 | 1 {
  while (i < end && s.charCodeAt(i) === CH_0) i++;
  while (j < endT && t.charCodeAt(j) === CH_0) j++;
  const lengthS = end - i;
  const lengthT = endT - j;
  if (lengthS !== lengthT) return lengthS < lengthT ? -1 : 1;
  return compareText(s, i, end, t, j, endT);
}

/** Code-unit comparison of s[i, end) and t[j, endT); a proper prefix sorts first. */
export function compareText(s: string, i: number, end: number, t: string, j: number, endT: number): -1 | 0 | 1 {
  for (; i < end && j < endT; i++, j++) {
    const x = s.charCodeAt(i);
    const y = t.charCodeAt(j);
    if (x !== y) return x < y ? -1 : 1;
  }
  const restS = end - i;
  const restT = endT - j;
  return restS === restT ? 0 : restS < restT ? -1 : 1;
}

/** How one format writes `[epoch:]version[-release]`. */
export interface EvrSyntax {
  /** The white space trimmed from both ends. */
  readonly isSpace: (c: number) => boolean;
  /** Where the version part of s[rest, end) ends: at the '-' that starts the release, or at end. */
  readonly releaseHyphen: (s: string, rest: number, end: number) => number;
  readonly isVersionChar: (c: number) => boolean;
  readonly isReleaseChar: (c: number) => boolean;
  /** The largest epoch the format accepts, as digits; null when unbounded. */
  readonly maxEpoch: string | null;
}

/** The parts of a valid EVR string as written; the epoch is '' when there is none. */
export interface EvrParts {
  readonly epoch: string;
  readonly version: string;
  readonly release: string;
}

/** C isspace: ASCII white space only, as dpkg trims. */
export function isAsciiSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

/** ECMAScript WhiteSpace and LineTerminator code units, the set String.prototype.trim removes. */
export function isJsSpace(c: number): boolean {
  if (c < 0x80) return isAsciiSpace(c);
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

// Loops, not indexOf and lastIndexOf: V8 calls those out of line, which costs
// more than scanning the few characters of a version.

/** The release starts after the last '-' (dpkg and rpm). */
export function lastHyphen(s: string, rest: number, end: number): number {
  for (let i = end - 1; i >= rest; i--) if (s.charCodeAt(i) === CH_HYPHEN) return i;
  return end;
}

/**
 * Orders any two strings, valid or not: trimmed, then the epochs by value
 * (the epoch is the text before the first ':' only when it is all digits, so
 * junk still orders deterministically; a missing one is 0), then the
 * versions, then the releases, each pair by comparePart. Releases are
 * compared even when one side has none, because an empty release sorts
 * after `~` in both formats (`1.0 > 1.0-~`, rpm's and dpkg's own tests).
 */
export function compareEvr(
  syntax: EvrSyntax,
  comparePart: (a: string, i: number, endA: number, b: string, j: number, endB: number) => -1 | 0 | 1,
  a: string,
  b: string,
): -1 | 0 | 1 {
  const startA = trimmedStart(a, syntax.isSpace);
  const endA = trimmedEnd(a, startA, syntax.isSpace);
  const startB = trimmedStart(b, syntax.isSpace);
  const endB = trimmedEnd(b, startB, syntax.isSpace);
  const restA = epochEnd(a, startA, endA);
  const restB = epochEnd(b, startB, endB);
  const byEpoch = compareDigitRuns(a, startA, epochDigitsEnd(startA, restA), b, startB, epochDigitsEnd(startB, restB));
  if (byEpoch !== 0) return byEpoch;
  const versionEndA = syntax.releaseHyphen(a, restA, endA);
  const versionEndB = syntax.releaseHyphen(b, restB, endB);
  return (
    comparePart(a, restA, versionEndA, b, restB, versionEndB) ||
    comparePart(a, releaseStart(versionEndA, endA), endA, b, releaseStart(versionEndB, endB), endB)
  );
}

/**
 * Whether v is a well-formed EVR string: trimmed, the only ':' that does not
 * belong to the version is an epoch's, the epoch is within bounds, the
 * version is not empty, and both parts use only their characters. An empty
 * release (`1.0-`) is accepted, as Clair's parse tables require.
 */
export function validEvr(syntax: EvrSyntax, v: string): boolean {
  const start = trimmedStart(v, syntax.isSpace);
  const end = trimmedEnd(v, start, syntax.isSpace);
  const rest = epochEnd(v, start, end);
  if (rest === start && hasColon(v, start, end)) return false;
  const maxEpoch = syntax.maxEpoch;
  if (maxEpoch !== null && compareDigitRuns(v, start, epochDigitsEnd(start, rest), maxEpoch, 0, maxEpoch.length) > 0) return false;
  const versionEnd = syntax.releaseHyphen(v, rest, end);
  if (versionEnd === rest) return false;
  for (let i = rest; i < versionEnd; i++) if (!syntax.isVersionChar(v.charCodeAt(i))) return false;
  for (let i = releaseStart(versionEnd, end); i < end; i++) if (!syntax.isReleaseChar(v.charCodeAt(i))) return false;
  return true;
}

/** The parts of v when validEvr accepts it, else null. */
export function parseEvr(syntax: EvrSyntax, v: string): EvrParts | null {
  if (!validEvr(syntax, v)) return null;
  const start = trimmedStart(v, syntax.isSpace);
  const end = trimmedEnd(v, start, syntax.isSpace);
  const rest = epochEnd(v, start, end);
  const versionEnd = syntax.releaseHyphen(v, rest, end);
  return {
    epoch: v.slice(start, epochDigitsEnd(start, rest)),
    version: v.slice(rest, versionEnd),
    release: v.slice(releaseStart(versionEnd, end), end),
  };
}

function trimmedStart(s: string, isSpace: (c: number) => boolean): number {
  let start = 0;
  while (start < s.length && isSpace(s.charCodeAt(start))) start++;
  return start;
}

function trimmedEnd(s: string, start: number, isSpace: (c: number) => boolean): number {
  let end = s.length;
  while (end > start && isSpace(s.charCodeAt(end - 1))) end--;
  return end;
}

/**
 * Where the rest of s[start, end) begins after `epoch:`. The epoch is the
 * text before the first ':' when it is a non-empty run of digits; otherwise
 * there is none and the rest begins at start.
 */
function epochEnd(s: string, start: number, end: number): number {
  const digitsEnd = skipDigits(s, start, end);
  return digitsEnd > start && digitsEnd < end && s.charCodeAt(digitsEnd) === CH_COLON ? digitsEnd + 1 : start;
}

/** The end of the epoch's digits, given where the rest begins: an empty range when there is no epoch. */
function epochDigitsEnd(start: number, rest: number): number {
  return rest > start ? rest - 1 : start;
}

function releaseStart(versionEnd: number, end: number): number {
  return versionEnd < end ? versionEnd + 1 : end;
}

function hasColon(s: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (s.charCodeAt(i) === CH_COLON) return true;
  return false;
}

/**
 * Code-point order of whole strings (how Python and Ruby compare strings, and PHP and C
 * compare their UTF-8 bytes); a proper prefix sorts first. A lone surrogate counts as its own
 * value. Two strings are equal only when identical, so this orders what a format has no
 * order for without ever calling two different strings equal.
 */
export function compareCodePoints(a: string, b: string): -1 | 0 | 1 {
  return compareScalars(a, b, false);
}

/**
 * Byte-wise comparison of the UTF-8 encodings of whole strings, without encoding them:
 * UTF-8 orders like the code points it encodes, and no encoded code point is a prefix of
 * another's. A lone surrogate counts as U+FFFD, which is what encoding it would write.
 */
export function compareUtf8(a: string, b: string): -1 | 0 | 1 {
  return compareScalars(a, b, true);
}

function compareScalars(a: string, b: string, replaceSurrogates: boolean): -1 | 0 | 1 {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(j) as number;
    if (x !== y) {
      const u = replaceSurrogates && isSurrogate(x) ? 0xfffd : x;
      const v = replaceSurrogates && isSurrogate(y) ? 0xfffd : y;
      if (u !== v) return u < v ? -1 : 1;
    }
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  const restA = a.length - i;
  const restB = b.length - j;
  return restA === restB ? 0 : restA < restB ? -1 : 1;
}

function isSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdfff;
}

/** UTF-16 code-unit order of whole strings (JavaScript's `<`, .NET's ordinal); a proper prefix sorts first. */
export function compareCodeUnits(a: string, b: string): -1 | 0 | 1 {
  return compareText(a, 0, a.length, b, 0, b.length);
}

/**
 * A compare function for a format whose package manager has no order for versions it cannot
 * read: both read → compareParsed; only one read → the unreadable one first; neither → by
 * compareUnreadable, each format's own text order. Unreadable first because a package whose
 * version cannot be read then counts as older than any fix, so it is reported as affected
 * rather than silently passed; ordering the unreadable strings by their text (equal only when
 * identical) keeps compare a total order for the matcher. Each format's compare says what its
 * ecosystem itself does with such versions.
 */
export function unreadableFirst<P>(
  parse: (v: string) => P | null,
  compareParsed: (x: P, y: P) => -1 | 0 | 1,
  compareUnreadable: (a: string, b: string) => -1 | 0 | 1 = compareCodePoints,
): (a: string, b: string) => -1 | 0 | 1 {
  return (a, b) => {
    if (a === b) return 0;
    const x = parse(a);
    const y = parse(b);
    if (x !== null && y !== null) return compareParsed(x, y);
    if (x !== null) return 1;
    if (y !== null) return -1;
    return compareUnreadable(a, b);
  };
}

import type { VersionFormat } from '../../model/version-format.js';
import { compareCodeUnits, isDigit, unreadableFirst } from '../version-text.js';

/**
 * NuGet's version order: NuGet.Versioning's `VersionComparer.Default` over `NuGetVersion`, and
 * `NuGetVersion.TryParse` for validity, as NuGet/NuGet.Client has them at
 * fac35579c8c3c92799361e5695e9f7539b4fd5a2 (src/NuGet.Core/NuGet.Versioning).
 *
 *   major[.minor[.patch[.revision]]][-label{.label}][+metadata]
 *
 * - up to four numbers of at most 2^31 - 1, leading zeros allowed, missing ones 0
 *   (`1.0` = `1.0.0.0`); white space may stand around each of them (`19 . 19`), and the
 *   whole string is trimmed of .NET white space;
 * - labels of ASCII letters, digits and `-`, not empty, no leading zero in an all-digit one;
 *   a version with labels sorts before the same version without; labels compare one by one,
 *   numbers (what int.TryParse reads: `-` and digits within 32 bits) by value and before other
 *   labels, the others case-insensitively (ordinal, after ASCII upper-casing), and a shorter
 *   run of equal labels first;
 * - metadata of dot-separated non-empty parts of the same characters, ignored by the order.
 * A leading `v` is not accepted (`v1.0.0` is invalid), unlike npm's semver.
 *
 * NuGet has no order for strings it cannot parse; here they sort before every version, and
 * among themselves by their UTF-16 code units, so that the order stays total.
 *
 * Written here rather than taken from npm: @snyk/nuget-semver, the maintained package found,
 * compares labels as one string (`1.0.0-beta.10 < 1.0.0-beta.9`) and accepts what NuGet rejects.
 */

interface NuGetVersion {
  /** major, minor, patch, revision. */
  readonly numbers: readonly [number, number, number, number];
  /** The labels; empty for a release. */
  readonly labels: readonly string[];
}

const CH_DOT = 0x2e;
const CH_HYPHEN = 0x2d;
const CH_PLUS = 0x2b;
const CH_0 = 0x30;
const INT_MAX = 2 ** 31 - 1;
const INT_MIN = -(2 ** 31);

/**
 * NuGetVersion.TryParse: the trimmed string is cut at its first `-` or `+` into the numbers,
 * then at the next `+` into the labels and the metadata. A `-` or `+` that ends the string
 * stays with the part before it, which it spoils (`1.0-`, `1.0-a+` are invalid).
 */
function parse(v: string): NuGetVersion | null {
  let start = 0;
  let end = v.length;
  while (start < end && isDotnetSpace(v.charCodeAt(start))) start++;
  while (end > start && isDotnetSpace(v.charCodeAt(end - 1))) end--;
  const numbersEnd = cut(v, start, end, isLabelStart);
  const numbers = numbersEnd === end - 1 ? null : readNumbers(v, start, numbersEnd);
  if (numbers === null) return null;
  if (numbersEnd === end) return { numbers, labels: [] };
  let labels: string[] = [];
  let plus = numbersEnd;
  if (v.charCodeAt(numbersEnd) === CH_HYPHEN) {
    plus = cut(v, numbersEnd + 1, end, (c) => c === CH_PLUS);
    if (plus === end - 1) return null;
    labels = v.slice(numbersEnd + 1, plus).split('.');
    if (!labels.every((label) => isValidPart(label, false))) return null;
    if (plus === end) return { numbers, labels };
  }
  const metadata = v.slice(plus + 1, end).split('.');
  return metadata.every((part) => isValidPart(part, true)) ? { numbers, labels } : null;
}

/** Where the first unit of s[start, end) that ends a part stands, or end when there is none. */
function cut(s: string, start: number, end: number, endsPart: (c: number) => boolean): number {
  for (let i = start; i < end; i++) if (endsPart(s.charCodeAt(i))) return i;
  return end;
}

function isLabelStart(c: number): boolean {
  return c === CH_HYPHEN || c === CH_PLUS;
}

/**
 * The four numbers of s[start, end), as NuGet's TryGetNormalizedVersion reads them: each a
 * run of ASCII digits up to 2^31 - 1, white space allowed around it, `.` between them, and no
 * `.` at the end; the missing ones are 0.
 */
function readNumbers(s: string, start: number, end: number): [number, number, number, number] | null {
  const numbers: [number, number, number, number] = [0, 0, 0, 0];
  let i = start;
  for (let k = 0; k < 4 && (k === 0 || i < end); k++) {
    while (i < end && isDotnetSpace(s.charCodeAt(i))) i++;
    const digits = i;
    let value = 0;
    for (; i < end && isDigit(s.charCodeAt(i)); i++) {
      value = value * 10 + s.charCodeAt(i) - CH_0;
      if (value > INT_MAX) return null;
    }
    if (i === digits) return null;
    numbers[k] = value;
    while (i < end && isDotnetSpace(s.charCodeAt(i))) i++;
    if (i < end) {
      if (s.charCodeAt(i) !== CH_DOT || i + 1 === end) return null;
      i++;
    }
  }
  return i === end ? numbers : null;
}

/** NuGet's IsValidPart: not empty, ASCII letters, digits and `-`, and (for labels) `0` or no leading zero if all digits. */
function isValidPart(s: string, allowLeadingZeros: boolean): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) if (!isLabelChar(s.charCodeAt(i))) return false;
  if (allowLeadingZeros || s.length === 1 || s.charCodeAt(0) !== CH_0) return true;
  for (let i = 1; i < s.length; i++) if (!isDigit(s.charCodeAt(i))) return true;
  return false;
}

function isLabelChar(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === CH_HYPHEN;
}

function compareVersions(a: NuGetVersion, b: NuGetVersion): -1 | 0 | 1 {
  for (let k = 0; k < 4; k++) {
    const x = a.numbers[k] as number;
    const y = b.numbers[k] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  const la = a.labels;
  const lb = b.labels;
  if (la.length === 0 || lb.length === 0) return la.length === lb.length ? 0 : la.length === 0 ? 1 : -1;
  const count = Math.min(la.length, lb.length);
  for (let i = 0; i < count; i++) {
    const c = compareLabels(la[i] as string, lb[i] as string);
    if (c !== 0) return c;
  }
  return la.length === lb.length ? 0 : la.length < lb.length ? -1 : 1;
}

/** VersionComparer.CompareRelease: numbers first and by value, then OrdinalIgnoreCase. */
function compareLabels(a: string, b: string): -1 | 0 | 1 {
  const x = labelNumber(a);
  const y = labelNumber(b);
  if (x !== null || y !== null) {
    if (x === null) return 1;
    if (y === null) return -1;
    return x === y ? 0 : x < y ? -1 : 1;
  }
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const p = upperAscii(a.charCodeAt(i));
    const q = upperAscii(b.charCodeAt(i));
    if (p !== q) return p < q ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** int.TryParse on a label (whose characters are letters, digits and `-`): an optional `-`, digits, within 32 bits. */
function labelNumber(s: string): number | null {
  const negative = s.charCodeAt(0) === CH_HYPHEN;
  let i = negative ? 1 : 0;
  if (i === s.length) return null;
  let value = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!isDigit(c)) return null;
    value = value * 10 + c - CH_0;
    if (value > INT_MAX + 1) return null;
  }
  const signed = negative ? -value : value;
  return signed > INT_MAX || signed < INT_MIN ? null : signed;
}

function upperAscii(c: number): number {
  return c >= 0x61 && c <= 0x7a ? c - 0x20 : c;
}

/** .NET's char.IsWhiteSpace: the Unicode space separators, line and paragraph separators, U+0009–U+000D and U+0085. */
function isDotnetSpace(c: number): boolean {
  if (c <= 0xff) return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0x85 || c === 0xa0;
  return c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000;
}

/** Unreadable versions first, then by UTF-16 code units (see the comment at the top). */
const compare = unreadableFirst(parse, compareVersions, compareCodeUnits);

function valid(v: string): boolean {
  return parse(v) !== null;
}

export const nuget = { name: 'nuget', compare, valid, revision: 1 } satisfies VersionFormat;

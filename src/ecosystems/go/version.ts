import type { VersionFormat } from '../../model/version-format.js';
import { compareCodeUnits, compareDigitRuns, compareText, isAsciiLetter, isDigit, skipDigits } from '../version-text.js';

/**
 * Go module versions, ordered as golang.org/x/mod/semver orders them (the order the go command
 * uses): `vMAJOR[.MINOR[.PATCH[-PRERELEASE][+BUILD]]]`, Semantic Versioning 2.0.0 with two
 * exceptions, the required `v` and the shorthands `v1` = `v1.0.0` and `v1.2` = `v1.2.0` (which
 * take no prerelease or build). Numbers and numeric prerelease identifiers have no leading zeros;
 * build metadata, `+incompatible` included, is ignored. Pseudo-versions
 * (`v0.0.0-20191109021931-daa7c04131f5`, `v1.2.4-0.20191109021931-daa7c04131f5`) are prereleases
 * and order as such: after the tag they were derived from, before the next release.
 *
 * The `v` is optional here: OSV's Go records write `1.2.3`, a binary's build info `v1.2.3`, and
 * both name the same version (golang/vuln `internal/semver` adds the `v` the same way).
 *
 * The standard library and the toolchain (OSV packages `stdlib` and `toolchain`) are versioned by
 * Go release tags, `go1.21.3`, `go1.22rc1`, `go1.20`, which a binary's build info reports and
 * which OSV writes as semver (`1.21.3`, `1.22.0-rc.1`, `1.20.0`). They belong to this format
 * because they sit in the same OSV ecosystem: a `go` prefix is converted as govulncheck converts
 * it (golang/vuln `internal/semver` GoTagToSemver), `goX.Y[.Z][(alpha|beta|rc|-pre)N]` to
 * `vX.Y.Z[-kind.N]`, `go1` to `v1.0.0`. That reads a tag without its patch as the `.0` release,
 * which is what such tags were up to go1.20; go/version orders `go1.21` (a language version, never
 * a release from 1.21 on) before `go1.21rc1`, a case that does not arise for toolchains. The
 * suffix `runtime.Version()` adds for experiments (`go1.21.3 X:boringcrypto`) is the lister's to
 * cut off: with it the version is invalid.
 */
const CH_DOT = 0x2e;
const CH_HYPHEN = 0x2d;
const CH_PLUS = 0x2b;
const CH_V = 0x76;

const TOOLCHAIN = /^go(\d+)\.(\d+)(?:\.(\d+))?(?:(alpha|beta|rc|-pre)(\d+))?$/;

/** Where the parts of a parsed version lie in s; an absent MINOR or PATCH is an empty range, read as 0. */
interface Parsed {
  s: string;
  majorStart: number;
  majorEnd: number;
  minorStart: number;
  minorEnd: number;
  patchStart: number;
  patchEnd: number;
  /** The prerelease identifiers without the leading '-'; empty when there is none. */
  preStart: number;
  preEnd: number;
}

/** The two results every comparison reuses: comparisons never re-enter each other. */
const left: Parsed = emptyParsed();
const right: Parsed = emptyParsed();

function emptyParsed(): Parsed {
  return { s: '', majorStart: 0, majorEnd: 0, minorStart: 0, minorEnd: 0, patchStart: 0, patchEnd: 0, preStart: 0, preEnd: 0 };
}

/** Reads v into p; false when x/mod's semver.IsValid rejects it (after the prefix rules above). */
function parse(p: Parsed, v: string): boolean {
  let s = v;
  let i = 0;
  if (s.startsWith('go')) {
    const converted = fromToolchain(s);
    if (converted === null) return false;
    s = converted;
  }
  if (s.charCodeAt(0) === CH_V) i = 1;
  p.s = s;
  p.minorStart = p.minorEnd = p.patchStart = p.patchEnd = p.preStart = p.preEnd = s.length;
  p.majorStart = i;
  p.majorEnd = i = number(s, i);
  if (i < 0) return false;
  if (i === s.length) return true; // vMAJOR
  if (s.charCodeAt(i) !== CH_DOT) return false;
  p.minorStart = i + 1;
  p.minorEnd = i = number(s, i + 1);
  if (i < 0) return false;
  if (i === s.length) return true; // vMAJOR.MINOR
  if (s.charCodeAt(i) !== CH_DOT) return false;
  p.patchStart = i + 1;
  p.patchEnd = i = number(s, i + 1);
  if (i < 0) return false;
  if (s.charCodeAt(i) === CH_HYPHEN) {
    p.preStart = i + 1;
    p.preEnd = i = identifiers(s, i + 1, true);
    if (i < 0) return false;
  }
  if (s.charCodeAt(i) === CH_PLUS) i = identifiers(s, i + 1, false);
  return i === s.length;
}

/** A Go release tag as semver, or null when v is not one (see the comment at the top). */
function fromToolchain(v: string): string | null {
  if (v === 'go1') return 'v1.0.0';
  const m = TOOLCHAIN.exec(v);
  if (m === null) return null;
  const [, major, minor, patch, kind, n] = m;
  if (major === '1' && minor === '0' && patch === undefined) return null; // no such tag: go1.0 was go1
  const release = `v${major}.${minor}.${patch ?? '0'}`;
  if (kind === undefined) return release;
  return `${release}-${kind.startsWith('-') ? kind.slice(1) : kind}.${n}`;
}

/** The end of the decimal number at s[i], or -1 when there is none or it has a leading zero. */
function number(s: string, i: number): number {
  const end = skipDigits(s, i, s.length);
  if (end === i || (end - i > 1 && s.charCodeAt(i) === 0x30)) return -1;
  return end;
}

/**
 * The end of the dot-separated identifiers from s[i]: non-empty runs of [0-9A-Za-z-], up to a '+'
 * when prerelease (which also forbids leading zeros in numeric identifiers), else to the end;
 * -1 when malformed.
 */
function identifiers(s: string, i: number, prerelease: boolean): number {
  let start = i;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === CH_PLUS && prerelease) break;
    if (c === CH_DOT) {
      if (!goodIdentifier(s, start, i, prerelease)) return -1;
      start = i + 1;
    } else if (!isDigit(c) && !isAsciiLetter(c) && c !== CH_HYPHEN) {
      return -1;
    }
  }
  return goodIdentifier(s, start, i, prerelease) ? i : -1;
}

function goodIdentifier(s: string, start: number, end: number, prerelease: boolean): boolean {
  if (start === end) return false;
  return !prerelease || !(end - start > 1 && s.charCodeAt(start) === 0x30 && isNumeric(s, start, end));
}

function isNumeric(s: string, start: number, end: number): boolean {
  return skipDigits(s, start, end) === end;
}

/** x/mod's comparePrerelease over s[i, end) and t[j, endT), identifiers without the leading '-'. */
function comparePrerelease(s: string, i: number, end: number, t: string, j: number, endT: number): -1 | 0 | 1 {
  if (i === end || j === endT) return i === end ? (j === endT ? 0 : 1) : -1; // a release after its prereleases
  for (;;) {
    const dotS = identifierEnd(s, i, end);
    const dotT = identifierEnd(t, j, endT);
    const numericS = isNumeric(s, i, dotS);
    const numericT = isNumeric(t, j, dotT);
    let c: -1 | 0 | 1;
    if (numericS !== numericT) c = numericS ? -1 : 1;
    else if (numericS) c = compareDigitRuns(s, i, dotS, t, j, dotT);
    else c = compareText(s, i, dotS, t, j, dotT);
    if (c !== 0) return c;
    if (dotS === end || dotT === endT) return dotS === end ? (dotT === endT ? 0 : -1) : 1;
    i = dotS + 1;
    j = dotT + 1;
  }
}

function identifierEnd(s: string, i: number, end: number): number {
  while (i < end && s.charCodeAt(i) !== CH_DOT) i++;
  return i;
}

/**
 * x/mod's semver.Compare, with the `v` optional and Go release tags converted. Invalid versions
 * sort before every valid one, as x/mod orders them; x/mod calls all invalid versions equal, here
 * they are ordered among themselves by their UTF-16 code units so that compare stays a total
 * order that tells distinct strings apart (x/mod's own Sort breaks those ties by the strings too).
 */
function compare(a: string, b: string): -1 | 0 | 1 {
  if (a === b) return 0;
  const okA = parse(left, a);
  const okB = parse(right, b);
  if (!okA || !okB) {
    if (okA) return 1;
    if (okB) return -1;
    return compareCodeUnits(a, b);
  }
  const x = left;
  const y = right;
  return (
    compareDigitRuns(x.s, x.majorStart, x.majorEnd, y.s, y.majorStart, y.majorEnd) ||
    compareDigitRuns(x.s, x.minorStart, x.minorEnd, y.s, y.minorStart, y.minorEnd) ||
    compareDigitRuns(x.s, x.patchStart, x.patchEnd, y.s, y.patchStart, y.patchEnd) ||
    comparePrerelease(x.s, x.preStart, x.preEnd, y.s, y.preStart, y.preEnd)
  );
}

function valid(v: string): boolean {
  return parse(left, v);
}

export const go = { name: 'go', compare, valid, revision: 1 } satisfies VersionFormat;

import type { VersionFormat } from '../../model/version-format.js';
import { compareCodePoints, unreadableFirst } from '../version-text.js';

/**
 * Composer's (Packagist's) version ordering, as composer/semver sorts versions (Semver::sort):
 * each version normalised by VersionParser::normalize (`v1.2` → `1.2.0.0`, `1.0RC1` →
 * `1.0.0.0-RC1`, `1.x-dev` → `1.9999999.9999999.9999999-dev`, `dev-` branches kept by name),
 * the default branches (`dev-master`, `dev-trunk`, `dev-default`) read as `9999999-dev`
 * (normalizeDefaultBranch), then compared with PHP's version_compare, which ranks `dev` <
 * `alpha`/`a` < `beta`/`b` < `RC` < a number < `patch`/`pl`/`p`.
 *
 * Written here rather than taken from npm: no maintained JavaScript port of composer/semver
 * exists (the npm packages that compare "composer versions" are semver or PHP
 * version_compare look-alikes that skip normalisation). The regular expressions are
 * VersionParser's, with PCRE's possessive quantifiers dropped (none of them can give back
 * anything that would let the rest match) and PCRE's `$`, which also matches before a final
 * newline, kept as `(?=\n?$)`.
 */

const END = '(?=\\n?$)';
/** PCRE's `\\s` without Unicode: ASCII white space only (JavaScript's `\\s` has Unicode's too). */
const WS = ' \\t\\n\\v\\f\\r';
const MODIFIER = '[._-]?(?:(stable|beta|b|RC|alpha|a|patch|pl|p)((?:[.-]?\\d+)*)?)?([.-]?dev)?';
const ALIAS = new RegExp(`^([^,${WS}]+) +as +[^,${WS}]+${END}`);
const STABILITY_FLAG = /@(?:stable|RC|beta|alpha|dev)$/i;
const BUILD_METADATA = new RegExp(`^([^,${WS}+]+)\\+[^${WS}]+${END}`);
const CLASSIC = new RegExp(`^v?(\\d{1,5})(\\.\\d+)?(\\.\\d+)?(\\.\\d+)?${MODIFIER}${END}`, 'i');
const DATE = new RegExp(`^v?(\\d{4}(?:[.:-]?\\d{2}){1,6}(?:[.:-]?\\d{1,3}){0,2})${MODIFIER}${END}`, 'i');
/** Not anchored at the start, as in VersionParser: PCRE's `.` stops only at a newline. */
const DEV_SUFFIX = new RegExp(`([^\\n]*?)[.-]?dev${END}`, 'i');
const DEV_PREFIX = /^dev-/i;
const BRANCH = new RegExp(`^v?(\\d+)(\\.(?:\\d+|[xX*]))?(\\.(?:\\d+|[xX*]))?(\\.(?:\\d+|[xX*]))?${END}`, 'i');

const STABILITIES: Readonly<Record<string, string>> = { a: 'alpha', b: 'beta', p: 'patch', pl: 'patch', rc: 'RC' };

/** PHP's trim(): space, tab, newline, carriage return, NUL and vertical tab. */
function phpTrim(s: string): string {
  return s.replace(/^[ \t\n\r\0\v]+|[ \t\n\r\0\v]+$/g, '');
}

/** VersionParser::normalize, or null where it throws. */
export function normalizeComposerVersion(input: string): string | null {
  let version = phpTrim(input);
  const alias = ALIAS.exec(version);
  if (alias !== null) version = alias[1] as string;
  const flag = STABILITY_FLAG.exec(version);
  if (flag !== null) version = version.slice(0, version.length - flag[0].length);
  if (version === 'master' || version === 'trunk' || version === 'default') version = `dev-${version}`;
  if (DEV_PREFIX.test(version)) return `dev-${version.slice(4)}`;
  const metadata = BUILD_METADATA.exec(version);
  if (metadata !== null) version = metadata[1] as string;

  const classic = CLASSIC.exec(version);
  if (classic !== null) {
    const [, major, minor, patch, build] = classic;
    return withModifiers(`${major}${minor || '.0'}${patch || '.0'}${build || '.0'}`, classic, 5);
  }
  const date = DATE.exec(version);
  if (date !== null) return withModifiers((date[1] as string).replace(/\D/g, '.'), date, 2);

  const dev = DEV_SUFFIX.exec(version);
  if (dev !== null) {
    const branch = normalizeBranch(dev[1] as string);
    if (branch !== null) return branch;
  }
  return null;
}

/** The stability suffix: `-RC1`, `-patch2`, `-beta2.1-3`, then `-dev`; `stable` adds nothing. */
function withModifiers(version: string, match: RegExpExecArray, index: number): string {
  const stability = match[index];
  if (stability) {
    if (stability === 'stable') return version;
    const lower = stability.toLowerCase();
    version += `-${STABILITIES[lower] ?? lower}${(match[index + 1] ?? '').replace(/^[.-]+/, '')}`;
  }
  if (match[index + 2]) version += '-dev';
  return version;
}

/** VersionParser::normalizeBranch, for numeric branches only (`1.x` → `1.9999999.9999999.9999999-dev`). */
function normalizeBranch(name: string): string | null {
  const match = BRANCH.exec(phpTrim(name));
  if (match === null) return null;
  let version = '';
  for (let i = 1; i < 5; i++) version += match[i]?.replace(/[*X]/g, 'x') ?? '.x';
  return `${version.replaceAll('x', '9999999')}-dev`;
}

/** VersionParser::normalizeDefaultBranch, which Semver::sort applies after normalize. */
function normalizeDefaultBranch(version: string): string {
  return version === 'dev-master' || version === 'dev-default' || version === 'dev-trunk' ? '9999999-dev' : version;
}

/**
 * PHP's version_compare (ext/standard/versioning.c): the version canonicalised (`-`, `_`,
 * `+` and other non-alphanumerics become `.`, and a `.` goes between digits and letters),
 * then compared part by part: numbers by value (strtol, so saturating at 2^63 - 1), words
 * by the rank of the special form they start with, a word against a number as that word
 * against `#`. When one side runs out, a number left on the other makes it greater and a
 * word is weighed against `#`.
 */
export function phpVersionCompare(a: string, b: string): -1 | 0 | 1 {
  if (a === '' || b === '') return a === b ? 0 : a === '' ? -1 : 1;
  return compareParts(canonicalParts(a), canonicalParts(b));
}

function compareParts(x: readonly string[], y: readonly string[]): -1 | 0 | 1 {
  let i = 0;
  for (; i < x.length && i < y.length; i++) {
    const p = x[i] as string;
    const q = y[i] as string;
    const c = isDigitAt(p) && isDigitAt(q) ? compareLong(p, q) : compareForms(isDigitAt(p) ? NUMBER : p, isDigitAt(q) ? NUMBER : q);
    if (c !== 0) return c;
  }
  if (i < x.length) return isDigitAt(x[i] as string) ? 1 : compareParts(x.slice(i), [NUMBER]);
  if (i < y.length) return isDigitAt(y[i] as string) ? -1 : compareParts([NUMBER], y.slice(i));
  return 0;
}

const NUMBER = '#N#';

function canonicalParts(version: string): string[] {
  if (version.startsWith('#')) return version.split('.');
  let out = version[0] as string;
  for (let i = 1; i < version.length; i++) {
    const c = version[i] as string;
    const last = out[out.length - 1];
    const previous = version[i - 1] as string;
    if (c === '-' || c === '_' || c === '+') {
      if (last !== '.') out += '.';
    } else if ((isLetterLike(previous) && isDigit(c)) || (isDigit(previous) && isLetterLike(c))) {
      if (last !== '.') out += '.';
      out += c;
    } else if (!isAlphanumeric(c)) {
      if (last !== '.') out += '.';
    } else {
      out += c;
    }
  }
  if (out.endsWith('.')) out = out.slice(0, -1);
  return out.split('.');
}

const SPECIAL_FORMS: readonly (readonly [string, number])[] = [
  ['dev', 0],
  ['alpha', 1],
  ['a', 1],
  ['beta', 2],
  ['b', 2],
  ['RC', 3],
  ['rc', 3],
  ['#', 4],
  ['pl', 5],
  ['p', 5],
];

function formRank(form: string): number {
  for (const [name, rank] of SPECIAL_FORMS) if (form.startsWith(name)) return rank;
  return -1;
}

function compareForms(a: string, b: string): -1 | 0 | 1 {
  const x = formRank(a);
  const y = formRank(b);
  return x === y ? 0 : x < y ? -1 : 1;
}

const LONG_MAX = 2n ** 63n - 1n;

function compareLong(a: string, b: string): -1 | 0 | 1 {
  const x = strtol(a);
  const y = strtol(b);
  return x === y ? 0 : x < y ? -1 : 1;
}

function strtol(s: string): bigint {
  let end = 0;
  while (end < s.length && isDigit(s[end] as string)) end++;
  const n = BigInt(s.slice(0, end));
  return n > LONG_MAX ? LONG_MAX : n;
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isDigitAt(part: string): boolean {
  return part.length > 0 && isDigit(part[0] as string);
}

/** Neither a digit nor a dot: the canonicaliser's "not a digit" (isndig). */
function isLetterLike(c: string): boolean {
  return !isDigit(c) && c !== '.';
}

function isAlphanumeric(c: string): boolean {
  return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/** Two versions as normalize wrote them. */
function compareNormalized(x: string, y: string): -1 | 0 | 1 {
  const p = normalizeDefaultBranch(x);
  const q = normalizeDefaultBranch(y);
  const pIsBranch = p.startsWith('dev-');
  const qIsBranch = q.startsWith('dev-');
  if (pIsBranch && qIsBranch) return compareCodePoints(p, q);
  if (pIsBranch || qIsBranch) return pIsBranch ? -1 : 1;
  return phpVersionCompare(p, q);
}

/**
 * Composer has no order between two branches (`dev-foo`, `dev-bar`: Comparator answers
 * false to <, > and ==) and none for what normalize rejects. Branches sort before every
 * numbered version, as version_compare puts them (`dev` is its lowest form), and among
 * themselves by name; rejected versions sort before everything, then by code points.
 */
const compare = unreadableFirst(normalizeComposerVersion, compareNormalized);

/** VersionParser::isValid: normalize accepts it. */
function valid(v: string): boolean {
  return normalizeComposerVersion(v) !== null;
}

export const composer = { name: 'composer', compare, valid, revision: 1 } satisfies VersionFormat;

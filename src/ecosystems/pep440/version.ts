import { VERSION_PATTERN } from '@renovatebot/pep440/lib/version.js';
import type { VersionFormat } from '../../model/version-format.js';
import { compareDigitRuns, compareText, isJsSpace, unreadableFirst } from '../version-text.js';

/**
 * PEP 440 version ordering, as pypa/packaging's `Version` orders versions (what pip uses).
 *
 * The grammar is @renovatebot/pep440's VERSION_PATTERN, the same expression as packaging's.
 * Its compare is not used: it reads every number into a double (`1.9007199254740993` equals
 * `1.9007199254740992`) and takes a local segment for a number whenever JavaScript's Number()
 * does (`+1e5`, `+0x1`), where packaging keeps it a string, which sorts before every number.
 * So the parts are compared here, from the strings the pattern captures, in packaging's key
 * order: epoch, release (trailing zeros dropped), pre-release (a dev release without pre or
 * post release sorts before `a`; none sorts after `rc`), post release, dev release, local.
 */
const PATTERN = new RegExp(`^${VERSION_PATTERN}$`, 'i');

/** A parsed version: digit strings, never numbers. Missing parts are null. */
interface Parsed {
  readonly epoch: string;
  readonly release: readonly string[];
  /** Rank of the pre-release label: -1 dev-only, 0 a, 1 b, 2 rc, 3 none. */
  readonly preRank: number;
  readonly pre: string;
  readonly post: string | null;
  readonly dev: string | null;
  /** Local segments, lower-cased; a segment of digits only is a number. */
  readonly local: readonly string[] | null;
}

const PRE_RANKS: Readonly<Record<string, number>> = {
  a: 0,
  alpha: 0,
  b: 1,
  beta: 1,
  c: 2,
  rc: 2,
  pre: 2,
  preview: 2,
};
const DEV_ONLY = -1;
const NO_PRE = 3;

function parse(v: string): Parsed | null {
  const start = skipSpace(v);
  const end = trimEnd(v, start);
  const groups = PATTERN.exec(start === 0 && end === v.length ? v : v.slice(start, end))?.groups;
  if (groups === undefined) return null;
  const postNumber = groups['post_n1'] ?? groups['post_n2'];
  const post = groups['post_l'] !== undefined || postNumber !== undefined ? (postNumber ?? '0') : null;
  const dev = groups['dev_l'] !== undefined ? (groups['dev_n'] ?? '0') : null;
  const preLabel = groups['pre_l'];
  const preRank =
    preLabel !== undefined ? (PRE_RANKS[preLabel.toLowerCase()] as number) : post === null && dev !== null ? DEV_ONLY : NO_PRE;
  const local = groups['local'];
  return {
    epoch: groups['epoch'] ?? '0',
    release: (groups['release'] as string).split('.'),
    preRank,
    pre: groups['pre_n'] ?? '0',
    post,
    dev,
    local: local === undefined ? null : local.toLowerCase().split(/[._-]/),
  };
}

/** Releases compare as if padded with zeros, which is packaging's "trailing zeros dropped". */
function compareRelease(a: readonly string[], b: readonly string[]): -1 | 0 | 1 {
  for (let i = 0; i < a.length || i < b.length; i++) {
    const c = compareNumber(a[i] ?? '0', b[i] ?? '0');
    if (c !== 0) return c;
  }
  return 0;
}

/** A missing post release sorts first; a missing dev release sorts last. */
function compareOptional(a: string | null, b: string | null, missing: -1 | 1): -1 | 0 | 1 {
  if (a === null || b === null) return a === b ? 0 : a === null ? missing : (-missing as -1 | 1);
  return compareNumber(a, b);
}

/**
 * No local version sorts first. Segments pairwise: strings before numbers, strings as
 * strings, numbers by value; when one runs out first, it is the smaller.
 */
function compareLocal(a: readonly string[] | null, b: readonly string[] | null): -1 | 0 | 1 {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  for (let i = 0; i < a.length && i < b.length; i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    const xIsNumber = DIGITS.test(x);
    const yIsNumber = DIGITS.test(y);
    if (xIsNumber !== yIsNumber) return xIsNumber ? 1 : -1;
    const c = xIsNumber ? compareNumber(x, y) : compareText(x, 0, x.length, y, 0, y.length);
    if (c !== 0) return c;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

const DIGITS = /^[0-9]+$/;

function compareParsed(a: Parsed, b: Parsed): -1 | 0 | 1 {
  return (
    compareNumber(a.epoch, b.epoch) ||
    compareRelease(a.release, b.release) ||
    (a.preRank === b.preRank ? 0 : a.preRank < b.preRank ? -1 : 1) ||
    compareNumber(a.pre, b.pre) ||
    compareOptional(a.post, b.post, -1) ||
    compareOptional(a.dev, b.dev, 1) ||
    compareLocal(a.local, b.local)
  );
}

/**
 * Versions PEP 440 rejects ("legacy" versions) have no order in pip or packaging: since
 * packaging 22 they raise InvalidVersion and pip skips them. Before that, packaging's
 * LegacyVersion put every one of them before every PEP 440 version (its key's epoch was -1),
 * so they keep that place here; among themselves they sort by code points, which is how
 * Python orders strings, and they equal only themselves.
 */
const compare = unreadableFirst(parse, compareParsed);

function valid(v: string): boolean {
  return parse(v) !== null;
}

export const pep440 = { name: 'pep440', compare, valid, revision: 1 } satisfies VersionFormat;

function compareNumber(a: string, b: string): -1 | 0 | 1 {
  return compareDigitRuns(a, 0, a.length, b, 0, b.length);
}

/**
 * Python's `\s`, which packaging strips from both ends (`str.isspace`): what JavaScript's
 * trim() removes, but for U+FEFF, and with the information separators U+001C–U+001F and
 * U+0085 besides.
 */
function isPythonSpace(c: number): boolean {
  return (c >= 0x1c && c <= 0x1f) || c === 0x85 || (c !== 0xfeff && isJsSpace(c));
}

function skipSpace(v: string): number {
  let i = 0;
  while (i < v.length && isPythonSpace(v.charCodeAt(i))) i++;
  return i;
}

function trimEnd(v: string, start: number): number {
  let end = v.length;
  while (end > start && isPythonSpace(v.charCodeAt(end - 1))) end--;
  return end;
}

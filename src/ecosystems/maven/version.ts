import type { VersionFormat } from '../../model/version-format.js';
import { isDigit } from '../version-text.js';

/**
 * Apache Maven's version order: `org.apache.maven.artifact.versioning.ComparableVersion` as
 * apache/maven has it at 540897d3d3c329a38e4df9648249c9d407dbc8c2 (Maven 4,
 * compat/maven-artifact), the order OSV's Maven ecosystem names. Every string is a version.
 *
 * Written here rather than taken from npm: the one JavaScript port found (mvncmp) follows
 * Maven 3's ComparableVersion, before Maven 4's combination items (`1-sp-1` = `1-sp1` >
 * `1.0.final`, MNG-7714) and `.X` read as `-X` (MNG-7644), and has not been released since.
 *
 * A version, lower-cased, is read into a tree of items:
 * - a number: a run of ASCII digits, compared by value;
 * - a qualifier: a run of other characters, ranked alpha < beta < milestone < rc (= cr) <
 *   snapshot < "" (= ga = final = release) < sp < any other, the others among themselves by
 *   their UTF-16 code units;
 * - a combination: a qualifier directly followed by a number (`rc1`, `sp-1`), where `a`, `b`
 *   and `m` stand for alpha, beta and milestone; ordered by the qualifier, then the number;
 * - a list: what follows a `-`, a letter-to-digit or digit-to-letter change, or a qualifier
 *   after `.`, nested in the list before it.
 * `.` only separates items of the same list. Trailing zeros, and zeros before a qualifier, are
 * dropped from each list (`1.0.0` = `1`, `1.0-alpha` = `1-alpha`). Two lists compare item by
 * item; a missing item compares as the release (`1-rc < 1 = 1-ga < 1-sp < 1.1`). Items of
 * different kinds order as qualifier < combination < list < number (`1-a < 1-a1 < 1-1 < 1.1`).
 *
 * ComparableVersion throws on two kinds of strings; ordering them is ours:
 * - a character outside the Basic Multilingual Plane (or a lone high surrogate, which Maven
 *   reads together with the UTF-16 unit after it) right after a digit, or right after a
 *   separator that follows one (`1𝟤`, `5-𝟤`): since MNG-8241 Maven ends the item one unit
 *   late and fails to read it as a number. Here the item ends where the character begins, as
 *   Maven 3 read it.
 * - a combination whose number, from its first decimal digit of any script on, is not all
 *   such digits (`x-٨y`: a `-` before any Unicode digit joins a combination, and Java parses
 *   its number digit by digit; or `x\ud8002+1`, where the surrogate hid the `2`). Here the
 *   whole combination reads as a qualifier.
 * Everything else, quirks included, is as Maven orders it: a high surrogate takes the UTF-16
 * unit after it into the same character even when that is a `.` or a digit; leading non-ASCII
 * zeros are kept, so they can make a number wider (and greater, since Maven ranks int, long
 * and BigInteger items by their width first) than its value says; the same goes for numbers
 * of 19 or more ASCII zeros, which stay as written (`1.0000000000000000000.1 > 1.0.1`).
 */

const NUMBER = 0;
const QUALIFIER = 1;
const COMBINATION = 2;
const LIST = 3;

interface NumberItem {
  readonly kind: typeof NUMBER;
  /** Java's item type: 0 int (up to 9 digits), 1 long (up to 18), 2 BigInteger. */
  readonly width: 0 | 1 | 2;
  /** The value in ASCII digits without leading zeros: '' for zero. */
  readonly digits: string;
}

interface QualifierItem {
  readonly kind: typeof QUALIFIER;
  /** Index in QUALIFIERS (the release's rank for ga, final and release), OTHER otherwise. */
  readonly rank: number;
  readonly text: string;
}

interface CombinationItem {
  readonly kind: typeof COMBINATION;
  readonly qualifier: QualifierItem;
  readonly number: NumberItem;
}

interface ListItem {
  readonly kind: typeof LIST;
  readonly items: Item[];
}

type Item = NumberItem | QualifierItem | CombinationItem | ListItem;

const QUALIFIERS: readonly string[] = ['alpha', 'beta', 'milestone', 'rc', 'snapshot', '', 'sp'];
const RELEASE = 5;
const OTHER = QUALIFIERS.length;
const RELEASE_NAMES: readonly string[] = ['ga', 'final', 'release'];

const INT_DIGITS = 9;
const LONG_DIGITS = 18;

const CH_0 = 0x30;
const CH_DOT = 0x2e;
const CH_HYPHEN = 0x2d;

const ZERO: NumberItem = { kind: NUMBER, width: 0, digits: '' };

/** Reads a version into its item tree, normalized as ComparableVersion.parseVersion leaves it. */
function parse(version: string): ListItem {
  const s = version.toLowerCase();
  const root: ListItem = { kind: LIST, items: [] };
  const lists: ListItem[] = [root];
  let list = root;
  // The three flags of Maven's parser. inDigits is not reset by separators: a qualifier
  // right after `1.` does not end a number, and digits right after `a.` do not start a
  // combination, because start has moved past the separator.
  let inDigits = false;
  let joined = false;
  let start = 0;
  const open = (): void => {
    const sub: ListItem = { kind: LIST, items: [] };
    list.items.push(sub);
    lists.push(sub);
    list = sub;
  };
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === CH_DOT || c === CH_HYPHEN) {
      if (i === start) list.items.push(ZERO);
      else {
        // `sp-1` reads as `sp1`: the `-` does not end a qualifier before a digit.
        if (c === CH_HYPHEN && !inDigits && i + 1 < s.length && isUnicodeDigit(s.charCodeAt(i + 1))) {
          joined = true;
          continue;
        }
        list.items.push(readItem(s, start, i, joined, inDigits));
      }
      start = i + 1;
      if (c === CH_HYPHEN && list.items.length > 0) open();
      joined = false;
    } else if (isDigit(c)) {
      if (!inDigits && i > start) {
        joined = true;
        if (list.items.length > 0) open();
      }
      inDigits = true;
    } else {
      if (inDigits && i > start) {
        list.items.push(readItem(s, start, i, joined, true));
        start = i;
        open();
        joined = false;
      }
      inDigits = false;
      if (isHighSurrogate(c) && i + 1 < s.length) i++;
    }
  }
  if (s.length > start) {
    // A qualifier after `.` starts a list, as after `-` (`1.0.0.rc1 < 1.0.0-rc2`, MNG-7644).
    if (!inDigits && list.items.length > 0) open();
    list.items.push(readItem(s, start, s.length, joined, inDigits));
  }
  for (let k = lists.length - 1; k >= 0; k--) normalize(lists[k] as ListItem);
  return root;
}

function readItem(s: string, start: number, end: number, joined: boolean, digits: boolean): Item {
  if (joined) return combination(s.slice(start, end).replaceAll('-', ''));
  if (digits) return asciiNumber(s, start, end);
  return qualifier(s.slice(start, end), false);
}

/** Maven strips leading '0's, but keeps a run of nothing else whole: its length sets the width. */
function asciiNumber(s: string, start: number, end: number): NumberItem {
  let i = start;
  while (i < end && s.charCodeAt(i) === CH_0) i++;
  const width = widthOf(i < end ? end - i : end - start);
  return { kind: NUMBER, width, digits: s.slice(i, end) };
}

function widthOf(length: number): 0 | 1 | 2 {
  return length <= INT_DIGITS ? 0 : length <= LONG_DIGITS ? 1 : 2;
}

function qualifier(text: string, followedByDigit: boolean): QualifierItem {
  let name = text;
  if (followedByDigit && name.length === 1) {
    if (name === 'a') name = 'alpha';
    else if (name === 'b') name = 'beta';
    else if (name === 'm') name = 'milestone';
  }
  if (name === 'cr') name = 'rc';
  const known = RELEASE_NAMES.includes(name) ? RELEASE : QUALIFIERS.indexOf(name);
  return { kind: QUALIFIER, rank: known === -1 ? OTHER : known, text: name };
}

/**
 * A qualifier and the number after it. The number starts at the first decimal digit of any
 * script (Java's Character.isDigit on a UTF-16 unit) and must be all such digits; where it is
 * not, Maven throws and the whole text reads as a qualifier instead.
 */
function combination(text: string): Item {
  let index = 0;
  while (index < text.length && !isUnicodeDigit(text.charCodeAt(index))) index++;
  if (index === text.length) return qualifier(text, false);
  let digits = '';
  for (let i = index; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!isUnicodeDigit(c)) return qualifier(text, false);
    digits += String(isDigit(c) ? c - CH_0 : unicodeDigitValue(c));
  }
  let asciiZeros = index;
  while (asciiZeros < text.length && text.charCodeAt(asciiZeros) === CH_0) asciiZeros++;
  const written = asciiZeros < text.length ? text.length - asciiZeros : text.length - index;
  let value = 0;
  while (value < digits.length && digits.charCodeAt(value) === CH_0) value++;
  const number: NumberItem = { kind: NUMBER, width: widthOf(written), digits: digits.slice(value) };
  return { kind: COMBINATION, qualifier: qualifier(text.slice(0, index), true), number };
}

/**
 * Drops null items (zero, an empty list) that end the list or stand before a qualifier, or
 * before a list that starts with a qualifier or a combination; right to left, so that
 * `1.0.0` loses both zeros. A list is always the last item of its parent.
 */
function normalize(list: ListItem): void {
  const items = list.items;
  for (let i = items.length - 1; i >= 0; i--) {
    if (!isNull(items[i] as Item)) continue;
    const next = items[i + 1];
    const first = next?.kind === LIST ? next.items[0] : undefined;
    if (next === undefined || next.kind === QUALIFIER || first?.kind === QUALIFIER || first?.kind === COMBINATION) items.splice(i, 1);
  }
}

function isNull(item: Item): boolean {
  switch (item.kind) {
    case NUMBER:
      return item.digits === '';
    case QUALIFIER:
      return item.text === '';
    case COMBINATION:
      return false;
    case LIST:
      return item.items.length === 0;
  }
}

/** ComparableVersion's Item.compareTo, b absent (null) past the end of the shorter list. */
function compareItems(a: Item, b: Item | undefined): -1 | 0 | 1 {
  switch (a.kind) {
    case NUMBER:
      if (b === undefined) return a.digits === '' ? 0 : 1;
      return b.kind === NUMBER ? compareNumbers(a, b) : 1;
    case QUALIFIER:
      if (b === undefined) return sign(a.rank - RELEASE);
      if (b.kind === QUALIFIER) return compareQualifiers(a, b);
      if (b.kind === COMBINATION) return compareQualifiers(a, b.qualifier) || -1;
      return -1;
    case COMBINATION:
      if (b === undefined) return compareItems(a.qualifier, undefined);
      if (b.kind === COMBINATION) return compareQualifiers(a.qualifier, b.qualifier) || compareNumbers(a.number, b.number);
      if (b.kind === QUALIFIER) return compareQualifiers(a.qualifier, b) || 1;
      return -1;
    case LIST:
      if (b === undefined) {
        for (const item of a.items) {
          const c = compareItems(item, undefined);
          if (c !== 0) return c;
        }
        return 0;
      }
      if (b.kind === NUMBER) return -1;
      if (b.kind !== LIST) return 1;
      return compareLists(a, b);
  }
}

function compareLists(a: ListItem, b: ListItem): -1 | 0 | 1 {
  const length = Math.max(a.items.length, b.items.length);
  for (let i = 0; i < length; i++) {
    const x = a.items[i];
    const y = b.items[i];
    const c = x === undefined ? (y === undefined ? 0 : negate(compareItems(y, undefined))) : compareItems(x, y);
    if (c !== 0) return c;
  }
  return 0;
}

function compareNumbers(a: NumberItem, b: NumberItem): -1 | 0 | 1 {
  if (a.width !== b.width) return a.width < b.width ? -1 : 1;
  if (a.digits.length !== b.digits.length) return a.digits.length < b.digits.length ? -1 : 1;
  return a.digits === b.digits ? 0 : a.digits < b.digits ? -1 : 1;
}

function compareQualifiers(a: QualifierItem, b: QualifierItem): -1 | 0 | 1 {
  if (a.rank !== b.rank) return a.rank < b.rank ? -1 : 1;
  if (a.rank !== OTHER || a.text === b.text) return 0;
  return a.text < b.text ? -1 : 1;
}

function compare(a: string, b: string): -1 | 0 | 1 {
  return a === b ? 0 : compareLists(parse(a), parse(b));
}

/**
 * ComparableVersion reads any string; Maven itself rejects only a missing version, and the
 * POM reader trims element text (Java's String.trim: every unit up to U+0020), so a blank
 * version is missing too. Invalid are the empty string and strings of such units only.
 */
function valid(v: string): boolean {
  for (let i = 0; i < v.length; i++) if (v.charCodeAt(i) > 0x20) return true;
  return false;
}

export const maven = { name: 'maven', compare, valid, revision: 1 } satisfies VersionFormat;

const UNICODE_DIGIT = /\p{Nd}/u;

/** Java's Character.isDigit on one UTF-16 unit: a decimal digit of any script in the BMP. */
function isUnicodeDigit(c: number): boolean {
  if (c < 0x80) return isDigit(c);
  return !isSurrogate(c) && UNICODE_DIGIT.test(String.fromCharCode(c));
}

/**
 * The value of a decimal digit: Unicode encodes each script's digits as ten consecutive code
 * points from zero to nine, and where two sets touch each is whole, so the value is the count
 * of digits before it in its run, modulo ten.
 */
function unicodeDigitValue(c: number): number {
  let run = 0;
  while (isUnicodeDigit(c - run - 1)) run++;
  return run % 10;
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function isSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdfff;
}

function sign(n: number): -1 | 0 | 1 {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

function negate(c: -1 | 0 | 1): -1 | 0 | 1 {
  return c === 0 ? 0 : c === 1 ? -1 : 1;
}

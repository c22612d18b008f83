/**
 * Character-level helpers shared by the version comparators. They work on string ranges
 * (s[i, end)) so comparators never slice or convert: digit runs of any length compare exactly.
 */
const CH_0 = 0x30;
const CH_9 = 0x39;

export function isDigit(c: number): boolean {
  return c >= CH_0 && c <= CH_9;
}

export function isAsciiLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

export function skipDigits(s: string, i: number): number {
  while (i < s.length && isDigit(s.charCodeAt(i))) i++;
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

const EPOCH_DIGITS = /^[0-9]+$/;

export interface EpochSplit {
  /** The epoch's digits ('0' when there is none). */
  readonly epoch: string;
  readonly rest: string;
}

/**
 * `epoch:rest` for dpkg and rpm: the epoch is the text before the first ':' when it is all digits.
 * Otherwise the whole string is the rest, so malformed input still orders deterministically.
 */
export function splitEpoch(s: string): EpochSplit {
  const colon = s.indexOf(':');
  if (colon > 0 && EPOCH_DIGITS.test(s.slice(0, colon))) return { epoch: s.slice(0, colon), rest: s.slice(colon + 1) };
  return { epoch: '0', rest: s };
}

/** Whether the text before the first ':' (if any) is a well-formed epoch. */
export function hasValidEpoch(s: string): boolean {
  const colon = s.indexOf(':');
  return colon < 0 || EPOCH_DIGITS.test(s.slice(0, colon));
}

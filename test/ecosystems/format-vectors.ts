import { expect, it } from 'vitest';
import type { VersionFormat } from '../../src/model/version-format.js';
import { type CompareRow, type Row, compareRows, negate, show } from './vector-table.js';
import { expectAntisymmetric, junkVersions } from './version-properties.js';

/**
 * Registers one test per row of a version table: `a OP b` rows in both directions (or, for an
 * operator of the format's own, the check given for it), a lone
 * `v` (must be valid) and `!v` (must be invalid). Runs of `<` rows where each row's b is the
 * next row's a (an upstream list "in sorting order") are also checked pair by pair, as the
 * upstream tests do, which proves transitivity over the list.
 */
export function checkVectors(
  format: VersionFormat,
  rows: readonly Row[],
  operators: Readonly<Record<string, (a: string, b: string) => void>> = {},
): void {
  const compares = compareRows(rows);
  it('has rows', () => {
    expect(compares.length).toBeGreaterThan(0);
  });
  for (const { line, a, op, b, expected } of compares) {
    it(`line ${line}: ${show(a)} ${op} ${show(b)}`, () => {
      const check = operators[op];
      if (check !== undefined) return check(a, b);
      if (expected === undefined) throw new Error(`line ${line}: unknown operator ${op}`);
      expect(format.compare(a, b)).toBe(expected);
      expect(format.compare(b, a)).toBe(negate(expected));
    });
  }
  for (const chain of ascendingChains(compares)) {
    it(`lines ${chain.first}-${chain.last}: every pair in order`, () => {
      const wrong: string[] = [];
      chain.versions.forEach((a, i) => {
        for (const b of chain.versions.slice(i + 1)) {
          if (format.compare(a, b) !== -1 || format.compare(b, a) !== 1) wrong.push(`${show(a)} < ${show(b)}`);
        }
      });
      expect(wrong).toEqual([]);
    });
  }
  checkValidity(format.valid, rows);
}

/** One test per lone-version row: `v` must be valid, `!v` must not. */
export function checkValidity(valid: (v: string) => boolean, rows: readonly Row[]): void {
  for (const { line, fields } of rows) {
    const [field] = fields;
    if (fields.length !== 1 || field === undefined) continue;
    const mustBeValid = !field.startsWith('!');
    const version = mustBeValid ? field : field.slice(1);
    it(`line ${line}: ${show(version)} is ${mustBeValid ? 'valid' : 'invalid'}`, () => {
      expect(valid(version)).toBe(mustBeValid);
    });
  }
}

interface Chain {
  readonly first: number;
  readonly last: number;
  readonly versions: readonly string[];
}

/** Runs of three or more versions joined by consecutive `<` rows. */
function ascendingChains(compares: readonly CompareRow[]): Chain[] {
  const chains: Chain[] = [];
  let run: CompareRow[] = [];
  const flush = (): void => {
    const [head] = run;
    const tail = run[run.length - 1];
    if (run.length >= 2 && head !== undefined && tail !== undefined) {
      chains.push({ first: head.line, last: tail.line, versions: [head.a, ...run.map((r) => r.b)] });
    }
    run = [];
  };
  for (const row of compares) {
    const previous = run[run.length - 1];
    if (row.op !== '<' || (previous !== undefined && (previous.b !== row.a || previous.line + 1 !== row.line))) flush();
    if (row.op === '<') run.push(row);
  }
  flush();
  return chains;
}

/**
 * The properties every format must have on any input, valid or not: compare never throws,
 * is reflexive and antisymmetric, and sorting with it gives a list where every earlier
 * element is at most every later one (a total order, so matching can sort and bisect).
 */
export function checkTotalOrder(format: VersionFormat, seed: number, known: readonly string[]): void {
  const junk = junkVersions(seed, 20_000);

  it('never throws, and is antisymmetric on any input', () => {
    expectAntisymmetric(format.compare, junk);
  });

  it('is reflexive on any input', () => {
    const broken = junk.filter((v) => format.compare(v, v) !== 0);
    expect(broken.map(show)).toEqual([]);
  });

  it('sorts junk and known versions consistently (transitive)', () => {
    const sample = [...junk.slice(0, 250), ...known].sort(format.compare);
    const wrong: string[] = [];
    sample.forEach((a, i) => {
      for (const b of sample.slice(i + 1)) if (format.compare(a, b) === 1) wrong.push(`${show(a)} > ${show(b)}`);
    });
    expect(wrong.slice(0, 20)).toEqual([]);
  });

  it('never throws on valid()', () => {
    for (const v of junk) expect(typeof format.valid(v)).toBe('boolean');
  });
}

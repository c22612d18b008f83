import { expect, it } from 'vitest';
import type { VersionFormat } from '../../src/model/version-format.js';
import { type CompareRow, type Expected, type Row, compareRows, negate, show } from './vector-table.js';
import { expectAntisymmetric, expectTotalOrder, junkVersions } from './version-properties.js';

/**
 * Tests registered from a version table (vector-table.ts): `a OP b` rows, lone `v` (must be valid)
 * and `!v` (must be invalid) rows. One function per check; checkTable runs a table's checks
 * together, checkAnyInput and checkTotalOrder check the format on junk versions.
 */

/** A compare row whose operator orders (<, =, ==, >). */
export type OrderingRow = CompareRow & { expected: Expected };

/** A check for an operator of a format's own (composer's `->`, apk's fuzzy `~`). */
export type OperatorCheck = (a: string, b: string) => void;

/** The `a OP b` rows, each with an ordering operator (<, =, ==, >); any other operator throws. */
export function orderingRows(rows: readonly Row[]): OrderingRow[] {
  return compareRows(rows).map((row) => {
    if (row.expected === undefined) throw new Error(`line ${row.line}: unknown operator ${row.op}`);
    return { ...row, expected: row.expected };
  });
}

/** The lone-version rows: the version and whether it must be valid. */
export function validityRows(rows: readonly Row[]): Array<{ line: number; version: string; valid: boolean }> {
  return rows.flatMap(({ line, fields }) => {
    const [field] = fields;
    if (fields.length !== 1 || field === undefined) return [];
    const valid = !field.startsWith('!');
    return [{ line, version: valid ? field : field.slice(1), valid }];
  });
}

/** Every version the table names, in its `a OP b` rows and its lone rows, once each. */
export function tableVersions(rows: readonly Row[]): string[] {
  const compared = compareRows(rows).flatMap(({ a, b }) => [a, b]);
  return [...new Set([...compared, ...validityRows(rows).map(({ version }) => version)])];
}

/** One test per ordering row, checking compare(a, b) and compare(b, a). */
export function checkOrdering(compare: VersionFormat['compare'], rows: readonly OrderingRow[]): void {
  for (const { line, a, op, b, expected } of rows) {
    it(`line ${line}: ${show(a)} ${op} ${show(b)}`, () => {
      expect(compare(a, b)).toBe(expected);
      expect(compare(b, a)).toBe(negate(expected));
    });
  }
}

/** One test per row with an operator of the format's own, run through that operator's check. */
export function checkOperators(rows: readonly CompareRow[], operators: Readonly<Record<string, OperatorCheck>>): void {
  for (const { line, a, op, b } of rows) {
    const check = operators[op];
    if (check === undefined) throw new Error(`line ${line}: unknown operator ${op}`);
    it(`line ${line}: ${show(a)} ${op} ${show(b)}`, () => {
      check(a, b);
    });
  }
}

/** One test per lone-version row: `v` must be valid, `!v` must not. */
export function checkValidity(valid: VersionFormat['valid'], rows: readonly Row[]): void {
  for (const { line, version, valid: expected } of validityRows(rows)) {
    it(`line ${line}: ${show(version)} is ${expected ? 'valid' : 'invalid'}`, () => {
      expect(valid(version)).toBe(expected);
    });
  }
}

/**
 * Consecutive `<` and `=` rows where each row's right side is the next row's left side form a
 * chain (`a < b`, `b = c`, `c < d`); every pair along it must compare as the chain says, which
 * checks transitivity on the table's own versions and, for a table transcribed from a sorted
 * list, every pair of that list as the upstream test compares them.
 */
export function checkChains(compare: VersionFormat['compare'], rows: readonly OrderingRow[]): void {
  const chains: OrderingRow[][] = [];
  for (const row of rows) {
    const chain = chains.at(-1);
    const last = chain?.at(-1);
    if (row.expected === 1) continue;
    if (chain !== undefined && last !== undefined && last.b === row.a && last.line + 1 === row.line) chain.push(row);
    else chains.push([row]);
  }
  for (const chain of chains) {
    if (chain.length < 2) continue;
    const first = chain[0] as OrderingRow;
    const versions = [first.a, ...chain.map((row) => row.b)];
    it(`lines ${first.line}-${first.line + chain.length - 1}: every pair along the chain`, () => {
      const wrong: string[] = [];
      for (let i = 0; i < versions.length; i++) {
        let expected: Expected = 0;
        for (let j = i + 1; j < versions.length; j++) {
          if ((chain[j - 1] as OrderingRow).expected === -1) expected = -1;
          const [a, b] = [versions[i] as string, versions[j] as string];
          if (compare(a, b) !== expected || compare(b, a) !== negate(expected)) wrong.push(`${show(a)} vs ${show(b)}`);
        }
      }
      expect(wrong).toEqual([]);
    });
  }
}

/** Every version of the table's lone rows that must be invalid sorts before every valid version its ordering rows name. */
export function checkInvalidFirst(format: VersionFormat, rows: readonly Row[]): void {
  const invalid = validityRows(rows).filter((row) => !row.valid);
  const ordered = compareRows(rows).filter(({ expected }) => expected !== undefined);
  const valid = [...new Set(ordered.flatMap(({ a, b }) => [a, b]))].filter(format.valid);
  it(`orders the ${invalid.length} invalid versions before the ${valid.length} valid ones`, () => {
    const wrong: string[] = [];
    for (const { version } of invalid) {
      for (const v of valid) {
        if (format.compare(version, v) !== -1 || format.compare(v, version) !== 1) wrong.push(`${show(version)} vs ${show(v)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
}

export interface TableChecks {
  /** How many `a OP b` rows the table holds, so that a reader slip cannot drop rows unseen. */
  readonly rows: number;
  /** Whether the format promises to sort every invalid version before every valid one (Maven, apk do not). */
  readonly invalidFirst: boolean;
  /** Checks for the table's operators beyond <, =, ==, >. */
  readonly operators?: Readonly<Record<string, OperatorCheck>>;
}

/** The checks above for a whole table: its row count, ordering rows, own operators, chains, validity rows and, where promised, invalid first. */
export function checkTable(format: VersionFormat, table: readonly Row[], checks: TableChecks): void {
  const compares = compareRows(table);
  const ordering = compares.flatMap((row) => (row.expected === undefined ? [] : [{ ...row, expected: row.expected }]));
  it(`has ${checks.rows} compare rows`, () => {
    expect(compares.length).toBe(checks.rows);
  });
  checkOrdering(format.compare, ordering);
  checkOperators(
    compares.filter(({ expected }) => expected === undefined),
    checks.operators ?? {},
  );
  checkChains(format.compare, ordering);
  checkValidity(format.valid, table);
  if (checks.invalidFirst) checkInvalidFirst(format, table);
}

/** Spellings of a junk string a format reads differently (Go's with and without `v`); by default the string itself. */
export type Spellings = ReadonlyArray<(v: string) => string>;

const AS_IS: Spellings = [(v) => v];

/**
 * What every format must do on any input, valid or not: compare never throws and is reflexive and
 * antisymmetric (each spelling's list on its own, so that neighbours differ late), valid() never
 * throws. The matcher sorts versions it has not validated.
 */
export function checkAnyInput(format: VersionFormat, seed: number, spellings: Spellings = AS_IS): void {
  const junk = junkVersions(seed, 20_000);
  const spelled = spellings.map((spell) => junk.map(spell));

  it('never throws, and is antisymmetric on any input', () => {
    for (const versions of spelled) expectAntisymmetric(format.compare, versions);
  });

  it('is reflexive on any input', () => {
    const broken = spelled.flat().filter((v) => format.compare(v, v) !== 0);
    expect(broken.map(show)).toEqual([]);
  });

  it('never throws on valid()', () => {
    for (const v of spelled.flat()) expect(typeof format.valid(v)).toBe('boolean');
  });
}

/**
 * compare is a total order on 300 junk strings (in each spelling) and the table's versions
 * together, so that matching can sort and bisect. Maven's and apk's orders are not (their own
 * tables break it), so their tests leave this out.
 */
export function checkTotalOrder(format: VersionFormat, seed: number, known: readonly string[], spellings: Spellings = AS_IS): void {
  it('is a total order on junk and the table versions together', () => {
    const junk = junkVersions(seed, 300);
    expectTotalOrder(format.compare, [...spellings.flatMap((spell) => junk.map(spell)), ...known]);
  });
}

import { expect, it } from 'vitest';
import type { VersionFormat } from '../../src/model/version-format.js';
import { type CompareRow, type Expected, type Row, compareRows, negate, show } from './vector-table.js';

/**
 * Tests registered from a vector table (vector-table.ts) that holds only `a OP b` ordering rows,
 * lone `v` (must be valid) and `!v` (must be invalid) rows.
 */

/** A compare row whose operator orders (<, =, ==, >). */
export type OrderingRow = CompareRow & { expected: Expected };

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

/** One test per ordering row, checking compare(a, b) and compare(b, a). */
export function checkOrdering(compare: VersionFormat['compare'], rows: readonly OrderingRow[]): void {
  for (const { line, a, op, b, expected } of rows) {
    it(`line ${line}: ${show(a)} ${op} ${show(b)}`, () => {
      expect(compare(a, b)).toBe(expected);
      expect(compare(b, a)).toBe(negate(expected));
    });
  }
}

/** One test per lone-version row. */
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

/** Every version of the table's lone rows that must be invalid sorts before every valid version the table names. */
export function checkInvalidFirst(format: VersionFormat, rows: readonly Row[]): void {
  const invalid = validityRows(rows).filter((row) => !row.valid);
  const valid = [...new Set(orderingRows(rows).flatMap(({ a, b }) => [a, b]))].filter(format.valid);
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

/** Everything above for a whole table: its ordering rows (count of them checked first), chains, validity rows and the invalid-first rule. */
export function checkTable(format: VersionFormat, table: readonly Row[], orderingRowCount: number): void {
  const rows = orderingRows(table);
  it(`has ${orderingRowCount} ordering rows`, () => {
    expect(rows.length).toBe(orderingRowCount);
  });
  checkOrdering(format.compare, rows);
  checkChains(format.compare, rows);
  checkValidity(format.valid, table);
  checkInvalidFirst(format, table);
}

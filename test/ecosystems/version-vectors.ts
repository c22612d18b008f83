import { expect, it } from 'vitest';
import { type CompareRow, type Expected, compareRows, negate, readTable, show } from './vector-table.js';

type Compare = (a: string, b: string) => -1 | 0 | 1;
type OrderingRow = CompareRow & { expected: Expected };

/** The `a OP b` rows of a table; an operator other than <, =, ==, > is an error in the table. */
export function orderingRows(path: string): OrderingRow[] {
  return compareRows(readTable(path)).map((row) => {
    if (row.expected === undefined) throw new Error(`${path}:${row.line}: unknown operator ${row.op}`);
    return { ...row, expected: row.expected };
  });
}

/**
 * One test per row, both directions; then one per run of rows that chain (`a < b`, `b < c`, or
 * `==` likewise), checking every pair of the run, as upstream tests check an ascending array.
 */
export function checkRuns(compare: Compare, rows: readonly OrderingRow[]): void {
  for (const { line, a, op, b, expected } of rows) {
    it(`line ${line}: ${show(a)} ${op} ${show(b)}`, () => {
      expect(compare(a, b)).toBe(expected);
      expect(compare(b, a)).toBe(negate(expected));
    });
  }
  for (const run of chains(rows)) {
    const [first] = run;
    const versions = [first?.a as string, ...run.map((row) => row.b)];
    it(`lines ${first?.line}-${run.at(-1)?.line}: every pair of the run ${first?.op}`, () => {
      const broken: string[] = [];
      for (let i = 0; i < versions.length; i++) {
        for (let j = i + 1; j < versions.length; j++) {
          const [a, b] = [versions[i] as string, versions[j] as string];
          const expected = first?.expected as Expected;
          if (compare(a, b) !== expected || compare(b, a) !== negate(expected)) broken.push(`${show(a)} vs ${show(b)}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
}

function chains(rows: readonly OrderingRow[]): OrderingRow[][] {
  const runs: OrderingRow[][] = [];
  let run: OrderingRow[] = [];
  for (const row of rows) {
    const last = run.at(-1);
    const continues = last !== undefined && last.op === row.op && last.line + 1 === row.line && last.b === row.a;
    if (!continues) {
      if (run.length > 1) runs.push(run);
      run = [];
    }
    if (row.op === '<' || row.op === '==') run.push(row);
  }
  if (run.length > 1) runs.push(run);
  return runs;
}

/** One test per lone field: `v` must be valid, `!v` invalid. */
export function checkValidity(valid: (v: string) => boolean, path: string): void {
  for (const { line, fields } of readTable(path)) {
    const [field] = fields;
    if (fields.length !== 1 || field === undefined) continue;
    const mustBeValid = !field.startsWith('!');
    const version = mustBeValid ? field : field.slice(1);
    it(`line ${line}: ${show(version)} is ${mustBeValid ? 'valid' : 'invalid'}`, () => {
      expect(valid(version)).toBe(mustBeValid);
    });
  }
}

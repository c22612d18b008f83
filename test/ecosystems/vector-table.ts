import { readFileSync } from 'node:fs';

/**
 * Reader for the version vector tables under test/fixtures/versions: one case
 * per line, fields separated by whitespace, `#` at the start of a field begins
 * a comment, and a field may be a JSON string literal when it holds
 * whitespace or must be visibly empty (`"  \t0:0-1"`, `""`), optionally
 * after a `!` (the apk table's "must be invalid" marker: `!" 1.0"`).
 */
export interface Row {
  /** 1-based line number, for test names. */
  readonly line: number;
  readonly fields: readonly string[];
}

const FIELD = /!?"(?:[^"\\]|\\.)*"|#.*|\S+/g;

export function readTable(path: string): Row[] {
  const rows: Row[] = [];
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((text, index) => {
      const fields: string[] = [];
      for (const [field] of text.matchAll(FIELD)) {
        if (field.startsWith('#')) break;
        fields.push(unquote(field));
      }
      if (fields.length > 0) rows.push({ line: index + 1, fields });
    });
  return rows;
}

function unquote(field: string): string {
  if (field.startsWith('"')) return JSON.parse(field) as string;
  if (field.startsWith('!"')) return `!${JSON.parse(field.slice(1)) as string}`;
  return field;
}

export type Expected = -1 | 0 | 1;

const ORDER: Readonly<Record<string, Expected>> = { '<': -1, '=': 0, '==': 0, '>': 1 };

export interface CompareRow {
  readonly line: number;
  readonly a: string;
  readonly b: string;
  readonly op: string;
  /** compare(a, b) for the ordering operators, undefined for others. */
  readonly expected: Expected | undefined;
}

/** The rows of the form `a OP b`. */
export function compareRows(rows: readonly Row[]): CompareRow[] {
  return rows.flatMap(({ line, fields }) => {
    const [a, op, b] = fields;
    if (fields.length !== 3 || a === undefined || op === undefined || b === undefined) return [];
    return [{ line, a, b, op, expected: ORDER[op] }];
  });
}

/** Shows a version in a test name with its whitespace visible. */
export function show(v: string): string {
  return JSON.stringify(v);
}

/** `-expected`, without producing -0 for EQUAL (toBe uses Object.is). */
export function negate(expected: Expected): Expected {
  return expected === 0 ? 0 : expected === 1 ? -1 : 1;
}

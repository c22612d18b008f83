import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseRpmEvr, rpm, rpmvercmp } from '../../src/ecosystems/rpm/version.js';
import { type CompareRow, type Expected, compareRows, negate, readTable, show } from './vector-table.js';
import { expectAntisymmetric, junkVersions } from './version-properties.js';

const fixtures = fileURLToPath(new URL('../fixtures/versions/', import.meta.url));

function orderingRows(file: string): (CompareRow & { expected: Expected })[] {
  return compareRows(readTable(fixtures + file)).map((row) => {
    if (row.expected === undefined) throw new Error(`${file}:${row.line}: unknown operator ${row.op}`);
    return { ...row, expected: row.expected };
  });
}

function checkBothWays(compare: (a: string, b: string) => -1 | 0 | 1, rows: ReturnType<typeof orderingRows>): void {
  for (const { line, a, op, b, expected } of rows) {
    it(`line ${line}: ${show(a)} ${op} ${show(b)}`, () => {
      expect(compare(a, b)).toBe(expected);
      expect(compare(b, a)).toBe(negate(expected));
    });
  }
}

describe('rpm version format', () => {
  it('is named rpm', () => {
    expect(rpm.name).toBe('rpm');
  });

  it('compares epochs of any length by value', () => {
    expect(rpm.compare('18446744073709551616:1', '18446744073709551615:2')).toBe(1);
    expect(rpm.compare('007:1', '7:1')).toBe(0);
  });

  it('orders malformed input without throwing', () => {
    expect(rpm.compare('a:1', 'a:1')).toBe(0);
    expect(rpm.compare('', '0')).toBe(-1);
    expect(rpm.valid('1.0^git1-1.fc40')).toBe(true);
  });

  it('compares digit runs of any length by value', () => {
    expect(rpm.compare('1.18446744073709551616', '1.18446744073709551615')).toBe(1);
    expect(rpm.compare('1.9007199254740993-1', '1.9007199254740992-1')).toBe(1);
    expect(rpm.compare('1.0000000000000000000000001', '1.1')).toBe(0);
    expect(rpm.compare('1-1.el8_0010', '1-1.el8_9')).toBe(1);
  });

  it('trims the white space String.prototype.trim does', () => {
    const disagreements: string[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c);
      if (/[0-9]/.test(ch)) continue;
      // Untrimmed, the character hides the epoch, which then counts as 0.
      const expected = ch.trim() === '' ? 0 : -1;
      if (rpm.compare(`${ch}1:1`, '1:1') !== expected) disagreements.push(c.toString(16));
    }
    expect(disagreements).toEqual([]);
  });

  it('is antisymmetric on any input, valid or not', () => {
    expectAntisymmetric(rpm.compare, junkVersions(0x29e1, 20_000));
  });
});

describe('rpm compare: test/fixtures/versions/rpm-compare.data (Clair)', () => {
  checkBothWays(rpm.compare, orderingRows('rpm-compare.data'));
});

describe('rpmvercmp: test/fixtures/versions/rpmvercmp.data (claircore)', () => {
  const rows = orderingRows('rpmvercmp.data');
  checkBothWays(rpmvercmp, rows);
  // None of these strings holds ':' or '-', so the whole EVR comparison must agree.
  describe('through rpm.compare', () => checkBothWays(rpm.compare, rows));
});

describe('rpm compare: EVR rows of test/fixtures/versions/nevra-compare.data (claircore)', () => {
  // The table also holds full NEVRA strings (name-[epoch:]version-release.arch);
  // parsing names and architectures is out of scope for a version format, so
  // only the rows where both sides are pure numeric EVRs are checked.
  const evr = /^(\d+:)?[\d.]+-[\d.]+$/;
  const rows = orderingRows('nevra-compare.data').filter(({ a, b }) => evr.test(a) && evr.test(b));
  it('has the three EVR rows', () => {
    expect(rows.map(({ a, op, b }) => `${a} ${op} ${b}`)).toEqual(['1:1-1 > 0:99-99', '1-1 < 1-2', '1-1 == 1-1']);
  });
  checkBothWays(rpm.compare, rows);
});

/** Registers the `"input" ok EPOCH "version" "release"` and `"input" error` rows of a table. */
function checkParseRows(file: string): void {
  for (const { line, fields } of readTable(fixtures + file)) {
    const [input = '', result, epoch, version, release] = fields;
    if (result === 'error') {
      it(`line ${line}: ${show(input)} is invalid`, () => {
        expect(parseRpmEvr(input)).toBeNull();
        expect(rpm.valid(input)).toBe(false);
      });
    } else if (result === 'ok') {
      it(`line ${line}: ${show(input)} parses`, () => {
        expect(parseRpmEvr(input)).toEqual({ epoch, version, release });
        expect(rpm.valid(input)).toBe(true);
      });
    }
  }
}

describe('rpm parse: test/fixtures/versions/rpm-parse.data (Clair)', () => {
  checkParseRows('rpm-parse.data');
});

describe('rpm EVRs with several hyphens: test/fixtures/versions/rpm-evr.data', () => {
  const rows = orderingRows('rpm-evr.data');
  it('has its ordering rows', () => {
    expect(rows.length).toBe(18);
  });
  checkBothWays(rpm.compare, rows);
  checkParseRows('rpm-evr.data');
});

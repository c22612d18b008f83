import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { maven } from '../../src/ecosystems/maven/version.js';
import { checkAnyInput, checkTable } from './vector-checks.js';
import { readTable } from './vector-table.js';

const table = readTable(fileURLToPath(new URL('../fixtures/versions/maven-compare.data', import.meta.url)));

describe('maven version format', () => {
  it('is named maven', () => {
    expect(maven.name).toBe('maven');
  });

  it('compares numbers of any length by value', () => {
    expect(maven.compare('1.18446744073709551616', '1.18446744073709551615')).toBe(1);
    expect(maven.compare('1.9007199254740993', '1.9007199254740992')).toBe(1);
    expect(maven.compare('1.000000001', '1.1')).toBe(0);
  });

  it('ranks Maven 4 combinations: a qualifier and the number after it, joined across a hyphen', () => {
    expect(maven.compare('1-sp-1', '1-sp1')).toBe(0);
    expect(maven.compare('1-sp', '1-sp1')).toBe(-1);
    expect(maven.compare('1.0-final', '1.0-sp-1')).toBe(-1);
  });

  it('keeps Maven quirks: a run of 19 zeros is a wider number than 0', () => {
    expect(maven.compare('1.0000000000000000000.1', '1.0.1')).toBe(1);
  });

  it('orders what ComparableVersion throws on as documented', () => {
    // The number ends where the non-BMP character begins, as in Maven 3.
    expect(maven.compare('1\u{1D7E4}', '1-\u{1D7E4}')).toBe(0);
    expect(maven.compare('5-\u{1D7E4}', '5-a')).toBe(1);
    // A combination whose number is not all digits reads as one qualifier.
    expect(maven.compare('x-\u0668y', 'x\u0668y')).toBe(0);
    // A combination with a non-ASCII number is read as Java reads it (ARABIC-INDIC DIGIT EIGHT).
    expect(maven.compare('1-rc-\u0668', '1-rc8')).toBe(0);
  });

  checkAnyInput(maven, 0x3a7e);
});

describe('maven vectors: test/fixtures/versions/maven-compare.data (ComparableVersionTest)', () => {
  checkTable(maven, table, { rows: 208, invalidFirst: false });
});

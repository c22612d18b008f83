import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pep440 } from '../../src/ecosystems/pep440/version.js';
import { checkAnyInput, checkTable, checkTotalOrder, tableVersions } from './vector-checks.js';
import { readTable } from './vector-table.js';

const table = readTable(fileURLToPath(new URL('../fixtures/versions/pep440-compare.data', import.meta.url)));

describe('pep440 version format', () => {
  it('is named pep440, revision 1', () => {
    expect(pep440.name).toBe('pep440');
    expect(pep440.revision).toBe(1);
  });

  it('puts versions PEP 440 rejects before every valid one, then in code-point order', () => {
    expect(pep440.compare('french toast', '0.0.dev0')).toBe(-1);
    expect(pep440.compare('0!0', '1.0-')).toBe(1);
    expect(pep440.compare('1.0-', '1.0.')).toBe(-1);
    expect(pep440.compare('1.0.', '1.0-')).toBe(1);
    // Code points, not UTF-16 code units: U+1F600 sits above U+FFFF.
    expect(pep440.compare('x\u{1F600}', 'x\uffff')).toBe(1);
    // Legacy versions equal only themselves, even where they differ only in separators.
    expect(pep440.compare('1.0-', '1.0_')).toBe(-1);
    expect(pep440.compare('1.0 ', '1.0')).toBe(0); // white space around a version is not part of it
  });

  checkAnyInput(pep440, 0x440);
  checkTotalOrder(pep440, 0x440, tableVersions(table));
});

describe('pep440 vectors: test/fixtures/versions/pep440-compare.data', () => {
  checkTable(pep440, table, { rows: 231, invalidFirst: true });
});

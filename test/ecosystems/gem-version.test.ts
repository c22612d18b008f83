import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { gem } from '../../src/ecosystems/gem/version.js';
import { checkAnyInput, checkTable, checkTotalOrder, tableVersions } from './vector-checks.js';
import { readTable } from './vector-table.js';

const table = readTable(fileURLToPath(new URL('../fixtures/versions/gem-compare.data', import.meta.url)));

describe('gem version format', () => {
  it('is named gem, revision 1', () => {
    expect(gem.name).toBe('gem');
    expect(gem.revision).toBe(1);
  });

  it('puts malformed versions before every correct one, then in code-point order', () => {
    expect(gem.compare('junk', '0.a')).toBe(-1);
    expect(gem.compare('0', '1..2')).toBe(1);
    expect(gem.compare('1..2', '1.2 3.4')).toBe(-1);
    expect(gem.compare('1.2 3.4', '1..2')).toBe(1);
    expect(gem.compare('x\u{1F600}', 'x\uffff')).toBe(1);
    expect(gem.compare('1.0-', '1.0a-')).toBe(-1);
  });

  checkAnyInput(gem, 0x9e3);
  checkTotalOrder(gem, 0x9e3, tableVersions(table));
});

describe('gem vectors: test/fixtures/versions/gem-compare.data', () => {
  checkTable(gem, table, { rows: 63, invalidFirst: true });
});

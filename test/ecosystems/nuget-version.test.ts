import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nuget } from '../../src/ecosystems/nuget/version.js';
import { checkAnyInput, checkTable, checkTotalOrder, tableVersions } from './vector-checks.js';
import { readTable } from './vector-table.js';

const table = readTable(fileURLToPath(new URL('../fixtures/versions/nuget-compare.data', import.meta.url)));

describe('nuget version format', () => {
  it('is named nuget', () => {
    expect(nuget.name).toBe('nuget');
  });

  it('reads numbers up to 2^31 - 1', () => {
    expect(nuget.valid('2147483647.2147483647.2147483647.2147483647')).toBe(true);
    expect(nuget.compare('1.0.0-2147483647', '1.0.0-2147483648')).toBe(-1);
    // 2^31 is no int: the label compares as text, after every number.
    expect(nuget.compare('1.0.0-2147483648', '1.0.0-a')).toBe(-1);
    expect(nuget.compare('1.0.0-2147483648', '1.0.0-3')).toBe(1);
  });

  it('reads a label of a hyphen and digits as a negative number, as int.TryParse does', () => {
    expect(nuget.valid('1.0.0--1')).toBe(true);
    expect(nuget.compare('1.0.0--1', '1.0.0-0')).toBe(-1);
    expect(nuget.compare('1.0.0--01', '1.0.0--1')).toBe(0);
  });

  it('trims .NET white space only', () => {
    expect(nuget.valid('\u00851.0\u3000')).toBe(true);
    expect(nuget.valid('\ufeff1.0')).toBe(false);
  });

  it('sorts what it cannot parse before every version, by code units', () => {
    expect(nuget.compare('v1.0.0', '0.0.0-a')).toBe(-1);
    expect(nuget.compare('v1.0.0', 'v1.0')).toBe(1);
    expect(nuget.compare('', 'x')).toBe(-1);
  });

  checkAnyInput(nuget, 0x9e7);
  checkTotalOrder(nuget, 0x9e7, tableVersions(table));
});

describe('nuget vectors: test/fixtures/versions/nuget-compare.data (NuGet.Versioning.Test)', () => {
  checkTable(nuget, table, { rows: 99, invalidFirst: true });
});

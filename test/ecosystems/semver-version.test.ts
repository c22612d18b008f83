import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { semver } from '../../src/ecosystems/semver/version.js';
import { checkAnyInput, checkTable, checkTotalOrder, tableVersions } from './vector-checks.js';
import { readTable } from './vector-table.js';

const table = readTable(fileURLToPath(new URL('../fixtures/versions/semver-compare.data', import.meta.url)));

describe('semver version format', () => {
  it('is named semver, revision 1', () => {
    expect(semver.name).toBe('semver');
    expect(semver.revision).toBe(1);
  });

  it('orders the Semantic Versioning 2.0.0 precedence example (§11)', () => {
    const list = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0'];
    for (let i = 0; i + 1 < list.length; i++) expect(semver.compare(list[i] as string, list[i + 1] as string)).toBe(-1);
    expect(semver.compare('1.0.0', '2.0.0')).toBe(-1);
    expect(semver.compare('2.1.1', '2.1.0')).toBe(1);
  });

  it('reads versions loosely, as npm reads a package.json', () => {
    for (const v of ['v1.2.3', '=1.2.3', ' 1.2.3 ', '01.2.3', '1.2.3beta']) expect(semver.valid(v)).toBe(true);
    expect(semver.compare('1.2.3beta', '1.2.3-beta')).toBe(0);
    for (const v of ['', '1.2', '1', '1.2.3.4', 'latest', '^1.2.3', '1.2.3 - 2.0.0']) expect(semver.valid(v)).toBe(false);
  });

  it('compares numeric prerelease identifiers as node-semver does: as doubles', () => {
    expect(semver.compare('1.0.0-10', '1.0.0-9')).toBe(1);
    // Both above 2^53 and rounding to the same double: npm calls them equal.
    expect(semver.compare('1.0.0-9007199254740993', '1.0.0-9007199254740992')).toBe(0);
  });

  it('orders invalid versions before valid ones, and by their strings', () => {
    expect(semver.compare('hello, world', '0.0.0-0')).toBe(-1);
    expect(semver.compare('0.0.0-0', 'xyz')).toBe(1);
    expect(semver.compare('hello, world', 'xyz')).toBe(-1);
    expect(semver.compare('', 'xyz')).toBe(-1);
    expect(semver.compare('xyz', 'xyz')).toBe(0);
  });

  checkAnyInput(semver, 0x5e3);
  checkTotalOrder(semver, 0x5e4, tableVersions(table));
});

describe('semver vectors: test/fixtures/versions/semver-compare.data (node-semver)', () => {
  checkTable(semver, table, { rows: 77, invalidFirst: true });
});

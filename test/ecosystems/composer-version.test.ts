import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { composer, normalizeComposerVersion, phpVersionCompare } from '../../src/ecosystems/composer/version.js';
import { checkAnyInput, checkTable, checkTotalOrder, tableVersions } from './vector-checks.js';
import { readTable } from './vector-table.js';

const table = readTable(fileURLToPath(new URL('../fixtures/versions/composer-compare.data', import.meta.url)));

/**
 * `a -> b`: VersionParser::normalize(a) is b, and where b is its own normal form the two
 * compare equal (`2010-01-02` becomes `2010.01.02`, which normalises to `2010.01.02.0`).
 */
function normalizesTo(a: string, b: string): void {
  expect(normalizeComposerVersion(a)).toBe(b);
  if (normalizeComposerVersion(b) !== b) return;
  expect(composer.compare(a, b)).toBe(0);
  expect(composer.compare(b, a)).toBe(0);
}

describe('composer version format', () => {
  it('is named composer, revision 1', () => {
    expect(composer.name).toBe('composer');
    expect(composer.revision).toBe(1);
  });

  it('puts branches before every numbered version, in name order among themselves', () => {
    expect(composer.compare('dev-bar', 'dev-foo')).toBe(-1);
    expect(composer.compare('dev-foo', 'dev-bar')).toBe(1);
    expect(composer.compare('dev-foo', '0.0.0-dev')).toBe(-1);
    expect(composer.compare('dev-master', 'master')).toBe(0);
    expect(composer.compare('dev-master', '99999.0.0.0')).toBe(1);
  });

  it('puts what normalize rejects before everything, then in code-point order', () => {
    expect(composer.compare('foo', 'dev-a')).toBe(-1);
    expect(composer.compare('1.0.0-meh', '1.0.0.0.0')).toBe(-1);
    expect(composer.compare('1.0.0.0.0', '1.0.0-meh')).toBe(1);
    expect(composer.compare('x\u{1F600}', 'x\uffff')).toBe(1);
  });

  it('compares as PHP version_compare does', () => {
    expect(phpVersionCompare('1.0.0.0-dev', '1.0.0.0-alpha')).toBe(-1);
    expect(phpVersionCompare('1.0.0.0-patch1', '1.0.0.0')).toBe(1);
    expect(phpVersionCompare('1.0.0.0-RC1', '1.0.0.0')).toBe(-1);
    expect(phpVersionCompare('1.0.0.0-stable', '1.0.0.0-dev')).toBe(-1);
    expect(phpVersionCompare('1.99999999999999999999', '1.9223372036854775807')).toBe(0);
  });

  checkAnyInput(composer, 0xc0);
  checkTotalOrder(composer, 0xc0, tableVersions(table));
});

describe('composer vectors: test/fixtures/versions/composer-compare.data', () => {
  checkTable(composer, table, { rows: 124, invalidFirst: true, operators: { '->': normalizesTo } });
});

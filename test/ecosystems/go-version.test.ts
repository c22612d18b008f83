import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { go } from '../../src/ecosystems/go/version.js';
import { checkAnyInput, checkOrdering, checkTable, checkTotalOrder, checkValidity, orderingRows, tableVersions } from './vector-checks.js';
import { readTable } from './vector-table.js';

const table = readTable(fileURLToPath(new URL('../fixtures/versions/go-compare.data', import.meta.url)));
const rows = orderingRows(table);

/** v without its leading `v`, as OSV's Go records write versions. */
function bare(v: string): string {
  return v.startsWith('v') ? v.slice(1) : v;
}

describe('go version format', () => {
  it('is named go, revision 1', () => {
    expect(go.name).toBe('go');
    expect(go.revision).toBe(1);
  });

  it('ignores build metadata, +incompatible included', () => {
    expect(go.compare('v2.0.0+incompatible', 'v2.0.0')).toBe(0);
    expect(go.compare('2.0.0+incompatible', 'v2.0.0')).toBe(0);
    expect(go.compare('v2.0.1+incompatible', 'v2.0.0')).toBe(1);
  });

  it('orders pseudo-versions between the tag they follow and the next release', () => {
    expect(go.compare('v0.0.0-20191109021931-daa7c04131f5', 'v0.0.0')).toBe(-1);
    expect(go.compare('v0.0.0-20191109021931-daa7c04131f5', 'v0.0.0-20200101000000-0123456789ab')).toBe(-1);
    expect(go.compare('v1.2.4-0.20191109021931-daa7c04131f5', 'v1.2.3')).toBe(1);
    expect(go.compare('v1.2.4-0.20191109021931-daa7c04131f5', 'v1.2.4')).toBe(-1);
    expect(go.compare('1.2.4-0.20191109021931-daa7c04131f5', 'v1.2.4-pre')).toBe(-1);
  });

  it('reads Go release tags as OSV writes them for stdlib and toolchain', () => {
    expect(go.compare('go1.21.3', '1.21.3')).toBe(0);
    expect(go.compare('go1.22rc1', '1.22.0-rc.1')).toBe(0);
    expect(go.compare('go1.22rc1', '1.21.9')).toBe(1);
    expect(go.compare('go1.20', '1.20.0')).toBe(0);
    expect(go.compare('go1.20.14', '1.20.0')).toBe(1);
    // Not tags: go1.0 never existed (the first release was go1), experiments are the lister's to cut off.
    for (const v of ['go1.0', 'go1.21.3 X:boringcrypto', 'go1.21.0-bigcorp', 'go1.999testmod', 'go1.05', 'go', 'gov1.2.3']) {
      expect(go.valid(v)).toBe(false);
    }
  });

  it('takes x/mod semver syntax with or without the v', () => {
    for (const v of ['1', '1.2', '0.0.0', '1.2.3-pre.0.20060102150405-hash', 'v10.0.0+a.b-c']) expect(go.valid(v)).toBe(true);
    for (const v of [
      '',
      'v',
      'vv1',
      'v01.2.3',
      'v1.02.3',
      'v1.2.03',
      'v1.2.3-01',
      'v1.2.3-',
      'v1.2.3+',
      'v1.2.3-a..b',
      'v1.2.3+a..b',
      'V1.2.3',
      ' v1.2.3',
      'v1.2.3.4',
      'v1.2.3_1',
    ]) {
      expect(go.valid(v)).toBe(false);
    }
    // Identifiers with letters compare as ASCII, leading zeros and all: '0' = '0', then 'a' > '1'.
    expect(go.compare('1.2.3-0a', 'v1.2.3-01a')).toBe(1);
  });

  it('compares numbers of any length by value', () => {
    expect(go.compare('v1.18446744073709551616.0', 'v1.18446744073709551615.0')).toBe(1);
    expect(go.compare('v1.0.0-18446744073709551616', 'v1.0.0-9')).toBe(1);
    expect(go.compare('v1.0.0-18446744073709551616', 'v1.0.0-18446744073709551617')).toBe(-1);
  });

  it('orders invalid versions before valid ones, and by their strings', () => {
    expect(go.compare('bad', 'v0.0.0-0')).toBe(-1);
    expect(go.compare('bad', 'v1.2-pre')).toBe(-1);
    expect(go.compare('', 'bad')).toBe(-1);
  });

  const spellings = [(v: string) => v, (v: string) => `v${v}`];
  const versions = tableVersions(table);
  checkAnyInput(go, 0x60a, spellings);
  checkTotalOrder(go, 0x60b, [...versions, ...versions.map(bare)], spellings);
});

describe('go vectors: test/fixtures/versions/go-compare.data (x/mod, x/vuln, go/version)', () => {
  checkTable(go, table, { rows: 76, invalidFirst: true });

  describe('the same rows without the leading v', () => {
    const stripped = rows
      .filter(({ a, b }) => a.startsWith('v') || b.startsWith('v'))
      .map((row) => ({ ...row, a: bare(row.a), b: bare(row.b) }));
    checkOrdering(go.compare, stripped);
    checkValidity(
      go.valid,
      table.map((row) => ({ ...row, fields: row.fields.map((f) => (f.startsWith('!') ? `!${bare(f.slice(1))}` : bare(f))) })),
    );
  });
});

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { apk, apkFuzzyCompare } from '../../src/ecosystems/apk/version.js';
import { type OperatorCheck, checkAnyInput, checkTable } from './vector-checks.js';
import { readTable, show } from './vector-table.js';
import { junkVersions } from './version-properties.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const ownTable = `${repoRoot}test/fixtures/versions/apk-compare.data`;
// apk-tools' own table is GPL-2.0, so it is not copied into this repository;
// it is used when the shared fixtures sit next to the checkout.
const upstreamTable = `${repoRoot}../shared/fixtures/apk-version/version.data`;
const hasUpstreamTable = existsSync(upstreamTable);
const own = readTable(ownTable);
const upstream = hasUpstreamTable ? readTable(upstreamTable) : [];

/** apk-tools' fuzzy operators: apkFuzzyCompare(a, b) is 0, -1, 1 or anything but 0. */
const FUZZY: Readonly<Record<string, OperatorCheck>> = {
  '~': (a, b) => expect(apkFuzzyCompare(a, b)).toBe(0),
  '<~': (a, b) => expect(apkFuzzyCompare(a, b)).toBe(-1),
  '>~': (a, b) => expect(apkFuzzyCompare(a, b)).toBe(1),
  '!~': (a, b) => expect(apkFuzzyCompare(a, b)).not.toBe(0),
};

describe('apk version format', () => {
  it('is named apk', () => {
    expect(apk.name).toBe('apk');
  });

  it('is reflexive on anything, malformed input included', () => {
    for (const v of ['1.2.4-r0', '', '!!', '1.0_foo', '\u00e9']) {
      expect(apk.compare(v, v)).toBe(0);
      expect(apkFuzzyCompare(v, v)).toBe(0);
    }
  });

  it('orders malformed versions by their UTF-8 bytes', () => {
    // Not by UTF-16 code units: U+1F600 is stored as a surrogate (0xd83d), below U+FFFF.
    expect(apk.compare('x\u{1F600}', 'x\uffff')).toBe(1);
    const versions = junkVersions(0xa9c, 5000).map((v) => `x${v}`);
    const disagreements: string[] = [];
    for (let i = 0; i + 1 < versions.length; i++) {
      const [a, b] = [versions[i] as string, versions[i + 1] as string];
      const bytes = Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b)));
      if (apk.compare(a, b) !== bytes) disagreements.push(`${show(a)} vs ${show(b)}`);
    }
    expect(disagreements).toEqual([]);
  });

  checkAnyInput(apk, 0xa9d);

  it('fuzzy matching only relaxes where b ends', () => {
    expect(apk.compare('3.18.4', '3.18')).toBe(1);
    expect(apkFuzzyCompare('3.18.4', '3.18')).toBe(0);
    expect(apkFuzzyCompare('3.19.0', '3.18')).toBe(1);
    expect(apkFuzzyCompare('3.18', '3.18.4')).toBe(-1);
  });
});

describe('apk vectors: test/fixtures/versions/apk-compare.data', () => {
  checkTable(apk, own, { rows: 242, invalidFirst: false, operators: FUZZY });
});

describe.runIf(hasUpstreamTable)('apk vectors: apk-tools test/unit/version.data', () => {
  checkTable(apk, upstream, { rows: 754, invalidFirst: false, operators: FUZZY });
});

/**
 * OSV records from GitHub's advisory database, the Go vulnerability database and RustSec
 * (test/fixtures/feeds/osv, with the answer key EXPECTED.md beside them), read into vulnerabilities
 * and matched with the catalog's version orders: each of the seven package versions gets exactly
 * the records whose ranges include it, and each range's boundaries fall where the key says.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { knownNamespaceFormat } from '../../src/ecosystems/index.js';
import { MATCHING } from '../../src/ecosystems/matching.js';
import { catalogEcosystem, parseOsvRecord } from '../../src/ecosystems/osv/records.js';
import type { StoredFix } from '../../src/model/matching.js';
import type { Vulnerability } from '../../src/model/vulnerability.js';
import { BOUNDARY_VERSIONS, SEVEN_VERSIONS } from './osv-answer-key.js';

const ROOT = new URL('../fixtures/feeds/osv/', import.meta.url);

function parsedFolder(folder: string): Vulnerability[] {
  const dir = new URL(`${folder}/`, ROOT);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .flatMap((f) => parseOsvRecord(readFileSync(new URL(f, dir)), catalogEcosystem));
}

const ALL = ['npm', 'PyPI', 'Maven', 'Go', 'RubyGems', 'crates.io', 'NuGet', 'Packagist'].flatMap(parsedFolder);

/** The entry of a record's entries for the package that decides for the version, as the store matches (undefined: not affected). */
function decidingEntry(v: Vulnerability, pkg: string, version: string): StoredFix | undefined {
  const fixes = v.fixedIn
    .filter((f) => f.feature === pkg)
    .map((f) => ({
      fixed_version: f.version,
      fix_state: f.state ?? null,
      affected_from: f.affectedFrom ?? null,
      affected_through: f.affectedThrough ?? null,
    }));
  return MATCHING.match(knownNamespaceFormat(v.namespace)!)(fixes, { version, arches: [] });
}

/** The ids of the records whose entries for the package leave this version affected, sorted. */
function affecting(namespace: string, pkg: string, version: string): string[] {
  return ALL.filter((v) => v.namespace === namespace && decidingEntry(v, pkg, version) !== undefined)
    .map((v) => v.name)
    .sort();
}

/** The FixedBy a record gives the version: the fix of the entry that decides, null when none has one. */
function fixedBy(id: string, pkg: string, version: string): string | null | undefined {
  return decidingEntry(
    ALL.find((r) => r.name === id)!,
    pkg,
    version,
  )?.fixed_version;
}

describe('OSV records matched with the ecosystems’ version orders', () => {
  it.each(SEVEN_VERSIONS)('%s %s %s gets exactly the records that name it', (namespace, pkg, version, expected) => {
    expect(affecting(namespace, pkg, version)).toEqual(expected);
  });

  it.each(BOUNDARY_VERSIONS)('%s %s %s: the range boundaries fall where the records put them', (namespace, pkg, version, expected) => {
    expect(affecting(namespace, pkg, version)).toEqual(expected);
  });

  it('reports as FixedBy the fix of the range the version is in', () => {
    expect(fixedBy('GHSA-vh95-rmgr-6w4m', 'minimist', '0.1.0')).toBe('0.2.1');
    expect(fixedBy('GHSA-vh95-rmgr-6w4m', 'minimist', '1.2.0')).toBe('1.2.3');
    expect(fixedBy('GHSA-p6mc-m468-83gw', 'lodash.pick', '4.4.0')).toBeNull();
    expect(fixedBy('GHSA-4w82-r329-3q67', 'com.fasterxml.jackson.core:jackson-databind', '2.9.10.1')).toBe('2.9.10.3');
  });
});

describe('an OSV record as a vulnerability', () => {
  const record = (id: string) => ALL.filter((v) => v.name === id);

  it('goes to its ecosystem’s namespace, with its CVE aliases, the advisory link and its details', () => {
    const [lodash] = record('GHSA-p6mc-m468-83gw');
    expect(lodash?.namespace).toBe('npm');
    expect(lodash?.cves).toEqual(['CVE-2020-8203']);
    expect(lodash?.link).toMatch(/^https:\/\//);
    expect(lodash?.description).not.toBe('');
  });

  it('takes its severity from its CVSS v3 vector, and keeps the score as other sources’ CVSS data is kept', () => {
    const [lodash] = record('GHSA-p6mc-m468-83gw');
    const osv = (lodash?.metadata as { OSV: { CVSSv3: { Score: number; Vectors: string } } }).OSV;
    expect(osv.CVSSv3.Vectors).toMatch(/^CVSS:3\.1\//);
    expect(osv.CVSSv3.Score).toBe(7.4);
    expect(lodash?.severity).toBe('High');
  });

  it('takes GitHub’s severity word where the record has no vector', () => {
    const [rack] = record('GHSA-54rr-7fvw-6x8f');
    expect(rack?.metadata).toBeNull();
    expect(rack?.severity).toBe('Low');
  });

  it('gives nothing for a withdrawn record, and leaves out ecosystems Tarsier does not know', () => {
    expect(record('GO-2022-0617')).toEqual([]);
    const other = JSON.stringify({ id: 'X-1', affected: [{ package: { ecosystem: 'Debian:11', name: 'zlib' }, ranges: [] }] });
    expect(parseOsvRecord(other, catalogEcosystem)).toEqual([]);
  });

  it('names what is wrong with a text that is not an OSV record', () => {
    expect(() => parseOsvRecord('{"id":"X-2","affected":{}}', catalogEcosystem)).toThrow('OSV record X-2: affected is not a list');
    expect(() => parseOsvRecord('[]', catalogEcosystem)).toThrow('the record is not an object');
  });

  it('reads a versions list where a package has no range of an ecosystem’s order, each version on its own', () => {
    const text = JSON.stringify({
      id: 'PYSEC-0000-1',
      affected: [
        {
          package: { ecosystem: 'PyPI', name: 'Some_Package' },
          ranges: [{ type: 'GIT', repo: 'https://example.com/repo', events: [{ introduced: '0' }, { fixed: 'abc123' }] }],
          versions: ['1.0', '1.1'],
        },
      ],
    });
    const [v] = parseOsvRecord(text, catalogEcosystem);
    expect(v?.namespace).toBe('pypi');
    expect(v?.fixedIn).toEqual([
      { feature: 'some-package', version: null, affectedFrom: '1.0', affectedThrough: '1.0' },
      { feature: 'some-package', version: null, affectedFrom: '1.1', affectedThrough: '1.1' },
    ]);
  });
});

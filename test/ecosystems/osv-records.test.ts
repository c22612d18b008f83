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

const GO_NET_MATCHES = [
  'GO-2022-0288',
  'GO-2022-0969',
  'GO-2022-1144',
  'GO-2023-1571',
  'GO-2023-1988',
  'GO-2023-2102',
  'GO-2024-2687',
  'GO-2024-3333',
  'GO-2025-3503',
  'GO-2025-3595',
  'GO-2026-4440',
  'GO-2026-4441',
  'GO-2026-4918',
  'GO-2026-5025',
  'GO-2026-5026',
  'GO-2026-5027',
  'GO-2026-5028',
  'GO-2026-5029',
  'GO-2026-5030',
  'GO-2026-5942',
];

describe('OSV records matched with the ecosystems’ version orders', () => {
  it.each([
    ['npm', 'lodash', '4.17.15', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-p6mc-m468-83gw']],
    ['npm', 'minimist', '1.2.0', ['GHSA-vh95-rmgr-6w4m', 'GHSA-xvch-5gv4-984h']],
    ['pypi', 'urllib3', '1.26.12', ['GHSA-34jh-p97f-mpxf', 'GHSA-g4mx-q9vg-27p4', 'GHSA-v845-jxx5-vc9f']],
    [
      'maven',
      'com.fasterxml.jackson.core:jackson-databind',
      '2.9.10.1',
      ['GHSA-4w82-r329-3q67', 'GHSA-57j2-w4cx-62h2', 'GHSA-58pp-9c76-5625', 'GHSA-jjjh-jjxp-wpff', 'GHSA-rgv9-q543-rqg4'],
    ],
    ['go', 'golang.org/x/net', 'v0.0.0-20211112202133-69e39bad7dc2', GO_NET_MATCHES],
    ['rubygems', 'rack', '2.2.3', ['GHSA-22f2-v57c-j9cx', 'GHSA-54rr-7fvw-6x8f', 'GHSA-65f5-mfpf-vfhj', 'GHSA-wq4h-7r42-5hrr']],
    ['crates.io', 'regex', '1.5.4', ['RUSTSEC-2022-0013']],
  ])('%s %s %s gets exactly the records that name it', (namespace, pkg, version, expected) => {
    expect(affecting(namespace, pkg, version)).toEqual(expected);
  });

  it.each([
    // lodash: the lodash entry ends at 4.17.19, lodash-es's (in the same record) at 4.17.20.
    ['npm', 'lodash', '3.6.0', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm']],
    ['npm', 'lodash', '4.17.18', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-p6mc-m468-83gw']],
    ['npm', 'lodash', '4.17.19', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm']],
    ['npm', 'lodash', '4.17.21', []],
    ['npm', 'lodash-es', '4.17.19', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-p6mc-m468-83gw']],
    ['npm', 'lodash-es', '4.17.20', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm']],
    ['npm', 'lodash-es', '4.17.21', []],
    // last_affected: the bound itself is affected.
    ['npm', 'lodash.pick', '4.4.0', ['GHSA-p6mc-m468-83gw']],
    ['npm', 'lodash.pick', '4.4.1', []],
    ['npm', 'lodash.pick', '3.9.0', []],
    // minimist: two ranges per record.
    ['npm', 'minimist', '0.2.1', ['GHSA-xvch-5gv4-984h']],
    ['npm', 'minimist', '0.2.4', []],
    ['npm', 'minimist', '1.2.2', ['GHSA-vh95-rmgr-6w4m', 'GHSA-xvch-5gv4-984h']],
    ['npm', 'minimist', '1.2.3', ['GHSA-xvch-5gv4-984h']],
    ['npm', 'minimist', '1.2.6', []],
    ['pypi', 'urllib3', '1.26.17', ['GHSA-34jh-p97f-mpxf', 'GHSA-g4mx-q9vg-27p4']],
    ['pypi', 'urllib3', '1.26.19', []],
    ['pypi', 'urllib3', '1.25.4', ['GHSA-34jh-p97f-mpxf', 'GHSA-g4mx-q9vg-27p4', 'GHSA-q2q7-5pp4-w6pg', 'GHSA-v845-jxx5-vc9f']],
    // PyPI names are matched in their normal form.
    ['pypi', 'urllib3', '1.26.18', ['GHSA-34jh-p97f-mpxf']],
    [
      'maven',
      'com.fasterxml.jackson.core:jackson-databind',
      '2.9.10',
      [
        'GHSA-4w82-r329-3q67',
        'GHSA-57j2-w4cx-62h2',
        'GHSA-58pp-9c76-5625',
        'GHSA-jjjh-jjxp-wpff',
        'GHSA-mx7p-6679-8g3q',
        'GHSA-rgv9-q543-rqg4',
      ],
    ],
    [
      'maven',
      'com.fasterxml.jackson.core:jackson-databind',
      '2.4.0-rc1',
      ['GHSA-4w82-r329-3q67', 'GHSA-57j2-w4cx-62h2', 'GHSA-jjjh-jjxp-wpff', 'GHSA-mx7p-6679-8g3q'],
    ],
    ['maven', 'com.fasterxml.jackson.core:jackson-databind', '2.13.4', ['GHSA-jjjh-jjxp-wpff']],
    ['maven', 'com.fasterxml.jackson.core:jackson-databind', '2.13.4.2', []],
    ['go', 'golang.org/x/net', 'v0.55.0', ['GO-2026-5942']],
    ['go', 'golang.org/x/net', 'v0.56.0', []],
    [
      'go',
      'golang.org/x/net',
      'v0.50.0',
      // Fixed at 0.53.0 and later, and GO-2026-4559's [0.50.0, 0.51.0).
      ['GO-2026-4559', ...GO_NET_MATCHES.slice(GO_NET_MATCHES.indexOf('GO-2026-4918'))],
    ],
    ['go', 'stdlib', '1.20.4', ['GO-2023-1840', 'GO-2023-2102', 'GO-2024-2687', 'GO-2025-3503', 'GO-2026-4918', 'GO-2026-5026']],
    ['go', 'stdlib', '1.20.5', ['GO-2023-2102', 'GO-2024-2687', 'GO-2025-3503', 'GO-2026-4918', 'GO-2026-5026']],
    // A toolchain's own spelling of the same release.
    ['go', 'stdlib', 'go1.20.4', ['GO-2023-1840', 'GO-2023-2102', 'GO-2024-2687', 'GO-2025-3503', 'GO-2026-4918', 'GO-2026-5026']],
    ['rubygems', 'rack', '2.2.3.1', ['GHSA-22f2-v57c-j9cx', 'GHSA-54rr-7fvw-6x8f', 'GHSA-65f5-mfpf-vfhj']],
    ['rubygems', 'rack', '2.2.8', ['GHSA-22f2-v57c-j9cx', 'GHSA-54rr-7fvw-6x8f']],
    ['rubygems', 'rack', '2.2.8.1', []],
    ['crates.io', 'regex', '1.5.5', []],
    // Withdrawn: nothing, whatever the version.
    ['go', 'k8s.io/kubernetes', 'v1.20.0', []],
  ])('%s %s %s: the range boundaries fall where the records put them', (namespace, pkg, version, expected) => {
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

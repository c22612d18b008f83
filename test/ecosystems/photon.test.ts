import { createReadStream, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parsePhotonCveData } from '../../src/ecosystems/photon/cve-data.js';
import { photonUpdater } from '../../src/ecosystems/photon/updater.js';

const FIXTURE = new URL('../fixtures/feeds/photon/cve_data_photon4.0-excerpt.json', import.meta.url);

const nvd = (id: string) => `https://nvd.nist.gov/vuln/detail/${id}`;

/** One entry of the feed, with the fields of a fixed package unless overridden. */
const entry = (fields: Record<string, unknown>) => ({
  cve_id: 'CVE-2099-0001',
  pkg: 'example',
  cve_score: 5.0,
  aff_ver: 'all versions before 1.0-1.ph5 are vulnerable',
  res_ver: '1.0-1.ph5',
  status: 'Fixed',
  ...fields,
});
const parse = (...entries: unknown[]) => parsePhotonCveData(JSON.stringify(entries), '5.0');

describe('parsePhotonCveData on the 4.0 excerpt', () => {
  const data = parsePhotonCveData(readFileSync(FIXTURE), '4.0');

  it('covers photon:4.0 and keeps CVE and other advisory ids, in natural order', () => {
    expect(data.namespaces).toEqual(['photon:4.0']);
    // The placeholder UNK-2 is left out; Black Duck's BDSA-2025-0719 is kept; cve-2024-7592 is upper-cased.
    expect(data.vulnerabilities.map((v) => v.name)).toEqual([
      'BDSA-2025-0719',
      'CVE-2000-0546',
      'CVE-2023-38545',
      'CVE-2023-38546',
      'CVE-2023-44487',
      'CVE-2023-50447',
      'CVE-2024-4453',
      'CVE-2024-7592',
    ]);
  });

  it('reads every record field by field', () => {
    const common = { namespace: 'photon:4.0', description: '', metadata: null };
    expect(data.vulnerabilities).toEqual([
      // Not a CVE: no NVD page, so Photon's list of advisories.
      {
        ...common,
        name: 'BDSA-2025-0719',
        link: 'https://github.com/vmware/photon/wiki/Security-Advisories',
        severity: 'High',
        fixedIn: [{ feature: 'krb5-devel', version: '1.17-15.ph4' }],
      },
      // Only "Not Affected": listed, with the state, and a score of 5.0.
      {
        ...common,
        name: 'CVE-2000-0546',
        link: nvd('CVE-2000-0546'),
        severity: 'Medium',
        fixedIn: [{ feature: 'krb5', version: null, state: 'not_affected' }],
      },
      {
        ...common,
        name: 'CVE-2023-38545',
        link: nvd('CVE-2023-38545'),
        severity: 'Critical',
        fixedIn: [{ feature: 'curl', version: '7.88.1-4.ph4' }],
      },
      {
        ...common,
        name: 'CVE-2023-38546',
        link: nvd('CVE-2023-38546'),
        severity: 'Low',
        fixedIn: [
          { feature: 'curl', version: '7.88.1-4.ph4' },
          { feature: 'curl-libs', version: '7.88.1-4.ph4' },
        ],
      },
      {
        ...common,
        name: 'CVE-2023-44487',
        link: nvd('CVE-2023-44487'),
        severity: 'High',
        fixedIn: [
          { feature: 'httpd', version: null, state: 'not_affected' },
          { feature: 'nghttp2', version: '1.57.0-1.ph4' },
        ],
      },
      // "Fixed" with "NA": Photon calls the package fixed and names no update, so no version is
      // affected; a null score: severity unknown.
      {
        ...common,
        name: 'CVE-2023-50447',
        link: nvd('CVE-2023-50447'),
        severity: 'Unknown',
        fixedIn: [{ feature: 'python3', version: null, state: 'not_affected' }],
      },
      // Listed twice, "before 1.22.7-3.ph4" and "before 1.22.7-2": vulnerable below either, so below
      // 1.22.7-3.ph4 (release 2 < 3.ph4), which is the fix.
      {
        ...common,
        name: 'CVE-2024-4453',
        link: nvd('CVE-2024-4453'),
        severity: 'High',
        fixedIn: [{ feature: 'gstreamer-plugins-base', version: '1.22.7-3.ph4' }],
      },
      // Written "cve-2024-7592", without a status (the older form of the file).
      {
        ...common,
        name: 'CVE-2024-7592',
        link: nvd('CVE-2024-7592'),
        severity: 'High',
        fixedIn: [
          { feature: 'python3', version: '3.10.11-11.ph4' },
          { feature: 'python3-libs', version: '3.10.11-11.ph4' },
        ],
      },
    ]);
  });
});

describe('parsePhotonCveData', () => {
  it('bands cve_score as CVSS v3: 0.0 Negligible, 0.1 Low, 4.0 Medium, 7.0 High, 9.0 Critical', () => {
    const scores: [unknown, string][] = [
      [0, 'Negligible'],
      [0.1, 'Low'],
      [3.9, 'Low'],
      [4.0, 'Medium'],
      [6.9, 'Medium'],
      [7.0, 'High'],
      [8.9, 'High'],
      [9.0, 'Critical'],
      [10, 'Critical'],
      [null, 'Unknown'],
      ['7.5', 'Unknown'],
      [11, 'Unknown'],
      [-1, 'Unknown'],
    ];
    for (const [score, severity] of scores) {
      expect(parse(entry({ cve_score: score })).vulnerabilities[0]?.severity, String(score)).toBe(severity);
    }
  });

  it("takes the highest score among a CVE's entries", () => {
    const data = parse(entry({ pkg: 'a', cve_score: 4.2 }), entry({ pkg: 'b', cve_score: 9.1 }), entry({ pkg: 'c', cve_score: null }));
    expect(data.vulnerabilities[0]?.severity).toBe('Critical');
  });

  it('reads rows of one package as alternatives: the higher fix, no fix over a fix, affected over not affected, whatever the order', () => {
    const fixed = entry({ pkg: 'a' });
    const later = entry({ pkg: 'a', res_ver: '1.0-2.ph5' });
    const unfixed = entry({ pkg: 'a', res_ver: 'NA', aff_ver: 'NA', status: 'Affected' });
    const notAffected = entry({ pkg: 'a', res_ver: 'NA', aff_ver: 'NA', status: 'Not Affected' });
    expect(parse(later, fixed).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'a', version: '1.0-2.ph5' }]);
    expect(parse(fixed, later).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'a', version: '1.0-2.ph5' }]);
    expect(parse(unfixed, fixed).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'a', version: null }]);
    expect(parse(fixed, notAffected).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'a', version: '1.0-1.ph5' }]);
    expect(parse(notAffected, unfixed).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'a', version: null }]);
    expect(parse(unfixed, notAffected).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'a', version: null }]);
  });

  it('reads "Fixed" (or no status) without a version as not affected, any other status as unfixed', () => {
    const notAffected = [{ feature: 'example', version: null, state: 'not_affected' }];
    expect(parse(entry({ res_ver: 'NA', aff_ver: 'NA' })).vulnerabilities[0]?.fixedIn).toEqual(notAffected);
    expect(parse(entry({ res_ver: '' })).vulnerabilities[0]?.fixedIn).toEqual(notAffected);
    expect(parse(entry({ res_ver: 'NA', status: undefined })).vulnerabilities[0]?.fixedIn).toEqual(notAffected);
    expect(parse(entry({ res_ver: 'NA', status: 'Vulnerable' })).vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'example', version: null },
    ]);
  });

  it('leaves out a res_ver that is not an rpm version', () => {
    expect(parse(entry({ res_ver: 'see advisory' })).vulnerabilities).toEqual([]);
  });

  it('skips entries without an id or a package, placeholders (UNK-2) and stray ids', () => {
    const data = parse(
      entry({ cve_id: '' }),
      entry({ pkg: '' }),
      entry({ cve_id: 'Re' }),
      entry({ cve_id: 'UNK-2' }),
      entry({ pkg: 7 }),
      'junk',
      null,
    );
    expect(data).toEqual({ namespaces: ['photon:5.0'], vulnerabilities: [] });
  });

  it('refuses a document that is not an array, and a release that is not like 4.0', () => {
    expect(() => parsePhotonCveData('{"branches":["4.0"]}', '4.0')).toThrow(/not a JSON array/);
    expect(() => parsePhotonCveData('[]', 'photon4')).toThrow(/release/);
  });
});

describe('photonUpdater', () => {
  it('has one optional part per release under the base', async () => {
    const parts = await photonUpdater.parts('https://mirror.example/photon_cve_metadata');
    expect(photonUpdater.name).toBe('photon');
    expect(parts.map((p) => [p.key, p.urls, p.optional])).toEqual([
      ['3.0', ['https://mirror.example/photon_cve_metadata/cve_data_photon3.0.json'], true],
      ['4.0', ['https://mirror.example/photon_cve_metadata/cve_data_photon4.0.json'], true],
      ['5.0', ['https://mirror.example/photon_cve_metadata/cve_data_photon5.0.json'], true],
    ]);
  });

  it("parses a part's file for its release, and claims nothing when the file is absent", async () => {
    const parts = await photonUpdater.parts('https://packages.broadcom.com/photon/photon_cve_metadata/');
    const four = parts.find((p) => p.key === '4.0')!;
    expect(four.urls).toEqual(['https://packages.broadcom.com/photon/photon_cve_metadata/cve_data_photon4.0.json']);
    const data = await four.parse([createReadStream(FIXTURE)]);
    expect(data.namespaces).toEqual(['photon:4.0']);
    expect(data.vulnerabilities).toHaveLength(8);
  });
});

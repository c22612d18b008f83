import { createReadStream, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseKevCatalog } from '../../src/ecosystems/kev/catalog.js';
import { kevSource } from '../../src/ecosystems/kev/updater.js';
import type { RiskSource } from '../../src/model/updater.js';

const fixture = (name: string) => new URL(`../fixtures/feeds/kev/${name}`, import.meta.url);

const MITIGATE = 'Apply mitigations per vendor instructions or discontinue use of the product if mitigations are unavailable.';

/** A catalog entry as CISA writes it, with made-up values unless overridden. */
const vulnerability = (fields: Record<string, unknown>) => ({
  cveID: 'CVE-2099-0001',
  vendorProject: 'Example',
  product: 'Widget',
  vulnerabilityName: 'Example Widget Overflow',
  dateAdded: '2099-01-05',
  shortDescription: 'An overflow.',
  requiredAction: MITIGATE,
  dueDate: '2099-01-26',
  knownRansomwareCampaignUse: 'Unknown',
  notes: 'https://nvd.nist.gov/vuln/detail/CVE-2099-0001',
  cwes: ['CWE-120'],
  ...fields,
});
const catalog = (...vulnerabilities: unknown[]) =>
  Buffer.from(
    JSON.stringify({
      title: 'CISA Catalog',
      catalogVersion: '2099.01.05',
      dateReleased: '2099-01-05T15:00:00.0000Z',
      count: 1,
      vulnerabilities,
    }),
  );
/** The entry parsed from {@link vulnerability} with no overrides. */
const parsed = {
  cve: 'CVE-2099-0001',
  vendorProject: 'Example',
  product: 'Widget',
  vulnerabilityName: 'Example Widget Overflow',
  dateAdded: '2099-01-05',
  dueDate: '2099-01-26',
  knownRansomwareCampaignUse: 'Unknown',
  requiredAction: MITIGATE,
};

describe('parseKevCatalog on the excerpts', () => {
  it('reads the 2025.02.24 excerpt (claircore)', () => {
    expect(parseKevCatalog(readFileSync(fixture('known_exploited_vulnerabilities-excerpt.json')))).toEqual({
      kind: 'kev',
      catalogVersion: '2025.02.24',
      entries: [
        {
          cve: 'CVE-2017-3066',
          vendorProject: 'Adobe',
          product: 'ColdFusion',
          vulnerabilityName: 'Adobe ColdFusion Deserialization Vulnerability',
          dateAdded: '2025-02-24',
          dueDate: '2025-03-17',
          knownRansomwareCampaignUse: 'Unknown',
          requiredAction: MITIGATE,
        },
        {
          cve: 'CVE-2021-44228',
          vendorProject: 'Apache',
          product: 'Log4j2',
          vulnerabilityName: 'Apache Log4j2 Remote Code Execution Vulnerability',
          dateAdded: '2021-12-10',
          dueDate: '2021-12-24',
          knownRansomwareCampaignUse: 'Known',
          requiredAction:
            'For all affected software assets for which updates exist, the only acceptable remediation actions are: 1) Apply updates; OR 2) remove affected assets from agency networks. Temporary mitigations using one of the measures provided at https://www.cisa.gov/uscert/ed-22-02-apache-log4j-recommended-mitigation-measures are only acceptable until updates are available.',
        },
      ],
    });
  });

  it('reads the 2025.02.19 excerpt (vunnel), trimming "SimpleHelp "', () => {
    expect(parseKevCatalog(readFileSync(fixture('known_exploited_vulnerabilities-excerpt-2.json')))).toEqual({
      kind: 'kev',
      catalogVersion: '2025.02.19',
      entries: [
        {
          cve: 'CVE-2025-0108',
          vendorProject: 'Palo Alto Networks',
          product: 'PAN-OS',
          vulnerabilityName: 'Palo Alto Networks PAN-OS Authentication Bypass Vulnerability',
          dateAdded: '2025-02-18',
          dueDate: '2025-03-11',
          knownRansomwareCampaignUse: 'Unknown',
          requiredAction: MITIGATE,
        },
        {
          cve: 'CVE-2024-53704',
          vendorProject: 'SonicWall',
          product: 'SonicOS',
          vulnerabilityName: 'SonicWall SonicOS SSLVPN Improper Authentication Vulnerability',
          dateAdded: '2025-02-18',
          dueDate: '2025-03-11',
          knownRansomwareCampaignUse: 'Unknown',
          requiredAction: MITIGATE,
        },
        {
          cve: 'CVE-2024-57727',
          vendorProject: 'SimpleHelp',
          product: 'SimpleHelp',
          vulnerabilityName: 'SimpleHelp Path Traversal Vulnerability',
          dateAdded: '2025-02-13',
          dueDate: '2025-03-06',
          knownRansomwareCampaignUse: 'Unknown',
          requiredAction: MITIGATE,
        },
      ],
    });
  });
});

describe('parseKevCatalog: the document', () => {
  it('refuses a document that is not JSON', () => {
    expect(() => parseKevCatalog(Buffer.from('<html>Access Denied</html>'))).toThrow(/KEV catalog: not valid JSON/);
    expect(() => parseKevCatalog(Buffer.from('{"vulnerabilities": ['))).toThrow(/not valid JSON/);
  });

  it('refuses JSON that is not an object', () => {
    expect(() => parseKevCatalog(Buffer.from('[]'))).toThrow(/not a JSON object/);
    expect(() => parseKevCatalog(Buffer.from('null'))).toThrow(/not a JSON object/);
  });

  it('refuses a document without a vulnerabilities array', () => {
    expect(() => parseKevCatalog(Buffer.from('{"catalogVersion":"2099.01.05"}'))).toThrow(/no "vulnerabilities" array/);
    expect(() => parseKevCatalog(Buffer.from('{"vulnerabilities":{}}'))).toThrow(/no "vulnerabilities" array/);
  });

  it('takes an empty catalog, a BOM, and a missing catalogVersion', () => {
    expect(parseKevCatalog(Buffer.from('\uFEFF{"vulnerabilities":[]}'))).toEqual({ kind: 'kev', catalogVersion: '', entries: [] });
  });
});

describe('parseKevCatalog: entries', () => {
  it('reads a full entry', () => {
    expect(parseKevCatalog(catalog(vulnerability({}))).entries).toEqual([parsed]);
  });

  it('skips an entry without cveID, or with a bad one, and keeps the others', () => {
    const { cveID: _, ...noId } = vulnerability({});
    const entries = parseKevCatalog(
      catalog(
        noId,
        vulnerability({ cveID: 'CVE-2099-1' }),
        vulnerability({ cveID: 42 }),
        'not an entry',
        null,
        vulnerability({ cveID: 'CVE-2099-0002' }),
      ),
    ).entries;
    expect(entries).toEqual([{ ...parsed, cve: 'CVE-2099-0002' }]);
  });

  it('skips an entry whose dateAdded is missing or not YYYY-MM-DD', () => {
    const { dateAdded: _, ...noDate } = vulnerability({ cveID: 'CVE-2099-0002' });
    const entries = parseKevCatalog(
      catalog(noDate, vulnerability({ cveID: 'CVE-2099-0003', dateAdded: '01/05/2099' }), vulnerability({ dateAdded: ' 2099-01-05 ' })),
    ).entries;
    expect(entries).toEqual([parsed]);
  });

  it('keeps an entry whose dueDate is missing or malformed, with dueDate ""', () => {
    const { dueDate: _, ...noDue } = vulnerability({});
    expect(parseKevCatalog(catalog(noDue)).entries).toEqual([{ ...parsed, dueDate: '' }]);
    expect(parseKevCatalog(catalog(vulnerability({ dueDate: 'soon' }))).entries).toEqual([{ ...parsed, dueDate: '' }]);
  });

  it('trims strings and makes missing or non-string ones ""', () => {
    const entry = parseKevCatalog(
      catalog({
        cveID: ' CVE-2099-0001\n',
        dateAdded: '2099-01-05',
        vendorProject: '  Example ',
        product: 7,
        knownRansomwareCampaignUse: null,
      }),
    ).entries;
    expect(entry).toEqual([
      {
        cve: 'CVE-2099-0001',
        vendorProject: 'Example',
        product: '',
        vulnerabilityName: '',
        dateAdded: '2099-01-05',
        dueDate: '',
        knownRansomwareCampaignUse: '',
        requiredAction: '',
      },
    ]);
  });

  it('keeps the earliest dateAdded of a CVE listed twice, at its first place', () => {
    const entries = parseKevCatalog(
      catalog(
        vulnerability({ dateAdded: '2099-03-01', product: 'later' }),
        vulnerability({ cveID: 'CVE-2099-0002' }),
        vulnerability({ dateAdded: '2099-01-05', product: 'earliest' }),
        vulnerability({ dateAdded: '2099-02-01', product: 'middle' }),
        vulnerability({ dateAdded: '2099-01-05', product: 'same day, listed later' }),
      ),
    ).entries;
    expect(entries).toEqual([
      { ...parsed, product: 'earliest' },
      { ...parsed, cve: 'CVE-2099-0002' },
    ]);
  });
});

describe('kevSource', () => {
  it('has one part, the configured file, read whole', async () => {
    expect(kevSource.name).toBe('kev');
    expect(kevSource.kind).toBe('risk');
    const url = 'https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json';
    // As the runner sees it.
    const source: RiskSource = kevSource;
    const parts = await source.parts(url, () => Promise.reject(new Error('no index')));
    expect(parts.map((p) => ({ key: p.key, urls: p.urls, optional: p.optional }))).toEqual([
      { key: 'catalog', urls: [url], optional: undefined },
    ]);
    const data = await parts[0]!.parse([createReadStream(fixture('known_exploited_vulnerabilities-excerpt.json'), { highWaterMark: 64 })]);
    expect(data).toEqual(parseKevCatalog(readFileSync(fixture('known_exploited_vulnerabilities-excerpt.json'))));
  });
});

/**
 * The scanner's small decisions: package URLs, the ignore file's rules, the data age line, the
 * risk context from the images API, and the report's findings and gate built from what a scan found.
 */
import { describe, expect, it } from 'vitest';
import type { ImageVulnerability } from '../../src/images/report.js';
import type { RiskContext } from '../../src/model/risk.js';
import { ScanError, type ScannedContents } from '../../src/scanner/backend.js';
import { dataAgeLines } from '../../src/scanner/command.js';
import { buildReport, type ReportOptions } from '../../src/scanner/findings.js';
import { ignoreEntryFor, parseIgnoreFile } from '../../src/scanner/ignore.js';
import { packageUrl } from '../../src/scanner/purl.js';
import { riskOf } from '../../src/scanner/remote.js';
import { epssText, SCAN_REPORT_VERSION } from '../../src/scanner/report.js';

describe('package URLs', () => {
  it.each([
    [
      { name: 'openssl', version: '1.1.1n-0+deb10u3', namespace: 'debian:10', versionFormat: 'dpkg' },
      'pkg:deb/debian/openssl@1.1.1n-0%2Bdeb10u3?distro=debian-10',
    ],
    [
      { name: 'perl', version: '1:5.28.1-6', namespace: 'ubuntu:18.04', versionFormat: 'dpkg' },
      'pkg:deb/ubuntu/perl@1%3A5.28.1-6?distro=ubuntu-18.04',
    ],
    [
      { name: 'musl', version: '1.2.4-r0', namespace: 'alpine:v3.18', versionFormat: 'apk' },
      'pkg:apk/alpine/musl@1.2.4-r0?distro=alpine-3.18',
    ],
    [{ name: 'glibc', version: '2.39-r1', namespace: 'wolfi:rolling', versionFormat: 'apk' }, 'pkg:apk/wolfi/glibc@2.39-r1'],
    [
      { name: 'bash', version: '4.4.20-4.el8_6', namespace: 'rhel:8', versionFormat: 'rpm' },
      'pkg:rpm/redhat/bash@4.4.20-4.el8_6?distro=rhel-8',
    ],
    [
      { name: 'bash', version: '5.2.15-1.amzn2023.0.2', namespace: 'amzn:2023', versionFormat: 'rpm' },
      'pkg:rpm/amazon/bash@5.2.15-1.amzn2023.0.2?distro=amzn-2023',
    ],
    [
      { name: 'libstdc++', version: '8.5.0-10.0.1.el8', namespace: 'oracle:8', versionFormat: 'rpm' },
      'pkg:rpm/oracle/libstdc%2B%2B@8.5.0-10.0.1.el8?distro=ol-8',
    ],
    // An LTSS product is sold on top of the service pack: the distribution is still SLES 15 SP4.
    [
      { name: 'openssl-3', version: '3.0.8-150400.4.69.1', namespace: 'sles:15.4-ltss', versionFormat: 'rpm' },
      'pkg:rpm/suse/openssl-3@3.0.8-150400.4.69.1?distro=sles-15.4',
    ],
    [
      { name: 'openssl-3', version: '3.0.8-150400.4.69.1', namespace: 'sles:15.4', versionFormat: 'rpm' },
      'pkg:rpm/suse/openssl-3@3.0.8-150400.4.69.1?distro=sles-15.4',
    ],
  ])('%o is %s', (pkg, purl) => expect(packageUrl(pkg)).toBe(purl));
});

describe('the ignore file', () => {
  const now = new Date('2026-11-24T12:00:00Z');

  it('applies an entry through the whole of its expires day (UTC), and not after', async () => {
    const entries = await parseIgnoreFile('- id: CVE-1\n  expires: 2026-11-24\n- id: CVE-2\n  expires: "2026-11-24T11:00:00Z"\n', 'f');
    expect(ignoreEntryFor(entries, { id: 'CVE-1', packageName: 'a' }, now)?.id).toBe('CVE-1');
    expect(ignoreEntryFor(entries, { id: 'CVE-1', packageName: 'a' }, new Date('2026-11-25T00:00:00Z'))).toBeUndefined();
    expect(ignoreEntryFor(entries, { id: 'CVE-2', packageName: 'a' }, now)).toBeUndefined();
  });

  it('matches ids in any case, and a package only when given', async () => {
    const entries = await parseIgnoreFile('- id: cve-2024-1\n  package: zlib\n- {id: CVE-2024-2}\n', 'f');
    expect(ignoreEntryFor(entries, { id: 'CVE-2024-1', packageName: 'zlib' }, now)).toBe(entries[0]);
    expect(ignoreEntryFor(entries, { id: 'CVE-2024-1', packageName: 'openssl' }, now)).toBeUndefined();
    expect(ignoreEntryFor(entries, { id: 'CVE-2024-2', packageName: 'anything' }, now)).toBe(entries[1]);
  });

  it('refuses what it cannot read, naming the entry: a mistake must not silently ignore nothing', async () => {
    expect(await parseIgnoreFile('', 'f')).toEqual([]);
    for (const [text, message] of [
      ['id: CVE-1', /must be a YAML list/],
      ['- CVE-1', /entry 1 is not a mapping/],
      ['- package: zlib', /entry 1 has no id/],
      ['- id: CVE-1\n  expires: next week', /expires must be an ISO date/],
      ['- id: CVE-1\n  expires: 2026-02-30x', /expires must be an ISO date/],
      ['- id: CVE-1\n  reasons: typo', /unknown fields \(reasons\)/],
      ['- id: [a, b]', /id must be a non-empty string/],
      ['- id: CVE-1\n  bad: [', /is not YAML/],
    ] as const) {
      await expect(parseIgnoreFile(text, 'ignore.yaml'), text).rejects.toThrow(ScanError);
      await expect(parseIgnoreFile(text, 'ignore.yaml'), text).rejects.toThrow(message);
    }
  });
});

describe('the data age lines', () => {
  const now = new Date('2026-11-24T12:00:00Z');
  const line = (updatedAt: string | null, sources = ['debian']) =>
    dataAgeLines([{ namespace: 'debian:12', state: 'current', updatedAt, sources }], now)[0];
  it.each([
    ['2026-11-24T11:30:00.000Z', 'vulnerability data for debian:12: updated 2026-11-24T11:30:00.000Z (less than an hour ago, from debian)'],
    ['2026-11-24T10:30:00.000Z', 'vulnerability data for debian:12: updated 2026-11-24T10:30:00.000Z (1 hour ago, from debian)'],
    ['2026-11-23T12:00:00.000Z', 'vulnerability data for debian:12: updated 2026-11-23T12:00:00.000Z (24 hours ago, from debian)'],
    ['2026-11-14T12:00:00.000Z', 'vulnerability data for debian:12: updated 2026-11-14T12:00:00.000Z (10 days ago, from debian)'],
  ])('%s', (at, expected) => expect(line(at)).toBe(expected));

  it('says when a namespace has none, and when an image needs none', () => {
    expect(line(null, [])).toBe('vulnerability data for debian:12: none');
    expect(dataAgeLines([], now)).toEqual(['vulnerability data: none needed (no package of a known distribution was found)']);
  });
});

describe('the risk context from the images API', () => {
  it('takes EPSS and KEV with the CVE each came from: the one named, else the vulnerability itself', () => {
    const EPSS = { Score: 0.97105, Percentile: 0.99834, Date: '2024-06-02' };
    const KEV = { DateAdded: '2022-04-06', DueDate: '2022-04-27', KnownRansomwareCampaignUse: 'Unknown' };
    expect(riskOf({ Name: 'CVE-2021-3156', EPSS, KEV })).toEqual({
      epss: { cve: 'CVE-2021-3156', score: 0.97105, percentile: 0.99834, date: '2024-06-02' },
      kev: { cve: 'CVE-2021-3156', dateAdded: '2022-04-06', dueDate: '2022-04-27', knownRansomwareCampaignUse: 'Unknown' },
    });
    expect(riskOf({ Name: 'ALAS-2021-1478', EPSS: { ...EPSS, CVE: 'CVE-2021-3156' }, KEV: { ...KEV, CVE: 'CVE-2021-3156' } })).toEqual({
      epss: { cve: 'CVE-2021-3156', score: 0.97105, percentile: 0.99834, date: '2024-06-02' },
      kev: { cve: 'CVE-2021-3156', dateAdded: '2022-04-06', dueDate: '2022-04-27', knownRansomwareCampaignUse: 'Unknown' },
    });
    expect(riskOf({ Name: 'CVE-2099-0001', EPSS })).toEqual({
      epss: { cve: 'CVE-2099-0001', score: 0.97105, percentile: 0.99834, date: '2024-06-02' },
    });
    // A server without risk context (or from before it): none.
    expect(riskOf({ Name: 'CVE-2099-0001' })).toEqual({});
  });
});

describe('EPSS as text', () => {
  it.each([
    [0.97105, 0.99834, '97.1% (p99)'],
    [0.02153, 0.89371, '2.2% (p89)'],
    [0.0005, 0.12, '0.1% (p12)'],
    [0.00043, 0.0971, '<0.1% (p9)'],
    [0, 0, '0.0% (p0)'],
    [1, 1, '100.0% (p100)'],
    // 0.29 × 100 is 28.999… in floating point: still p29.
    [0.1, 0.29, '10.0% (p29)'],
  ])('%d at %d is %s', (score, percentile, text) => expect(epssText({ score, percentile, date: '2024-06-02', cve: 'CVE-1' })).toBe(text));
});

describe('the report from what a scan found', () => {
  const LAYER = 'sha256:2c0d8a4b3e6f1a9c7b5d3e1f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b';
  const KEV = { cve: 'CVE-2021-3156', dateAdded: '2022-04-06', dueDate: '2022-04-27', knownRansomwareCampaignUse: 'Unknown' };
  const EPSS = { cve: 'CVE-2021-3156', score: 0.97105, percentile: 0.99834, date: '2024-06-02' };

  const vulnerability = (name: string, severity: ImageVulnerability['severity'], risk: RiskContext, fixedBy: string | null = '2') => ({
    name,
    namespace: 'debian:10',
    description: `${name} in the package`,
    link: '',
    severity,
    metadata: null,
    fixedBy,
    fixState: fixedBy === null ? ('affected' as const) : ('fixed' as const),
    risk,
  });

  /** sudo with a known exploited Medium (fixed) and an unfixed Low scored by EPSS alone; zlib1g with a High and no risk context. */
  function contents(kevFixed = true): ScannedContents {
    const pkg = (name: string, vulnerabilities: ImageVulnerability[]) => ({
      name,
      version: '1',
      namespace: 'debian:10',
      versionFormat: 'dpkg',
      addedBy: LAYER,
      vulnerabilities,
    });
    return {
      digest: 'sha256:9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0',
      platform: 'linux/amd64',
      references: [],
      layers: [LAYER],
      packages: [
        pkg('sudo', [
          vulnerability('CVE-2021-3156', 'Medium', { epss: EPSS, kev: KEV }, kevFixed ? '2' : null),
          vulnerability('CVE-2099-0002', 'Low', { epss: { ...EPSS, cve: 'CVE-2099-0002', score: 0.001, percentile: 0.4 } }, null),
        ]),
        pkg('zlib1g', [vulnerability('CVE-2099-0003', 'High', {})]),
      ],
      coverage: [],
    };
  }

  const options = (more: Partial<ReportOptions>): ReportOptions => ({
    input: 'image.tar',
    kind: 'docker-archive',
    database: { mode: 'standalone', updatedAt: null, namespaces: [] },
    ignoreUnfixed: false,
    ignore: [],
    failOn: undefined,
    failOnKev: false,
    now: new Date('2026-11-24T12:00:00Z'),
    ...more,
  });

  it('gives each finding the EPSS and KEV of its vulnerability, and counts the known exploited', () => {
    const report = buildReport(contents(), options({}));
    expect(report.schemaVersion).toBe(SCAN_REPORT_VERSION);
    expect(SCAN_REPORT_VERSION).toBe('1.4');
    const byId = Object.fromEntries(report.vulnerabilities.map((f) => [f.id, f]));
    expect(byId['CVE-2021-3156']).toMatchObject({
      epss: { score: 0.97105, percentile: 0.99834, date: '2024-06-02', cve: 'CVE-2021-3156' },
      kev: { dateAdded: '2022-04-06', dueDate: '2022-04-27', knownRansomwareCampaignUse: 'Unknown', cve: 'CVE-2021-3156' },
    });
    expect(byId['CVE-2099-0002']!.epss).toEqual({ score: 0.001, percentile: 0.4, date: '2024-06-02', cve: 'CVE-2099-0002' });
    expect(byId['CVE-2099-0002']).not.toHaveProperty('kev');
    expect(byId['CVE-2099-0003']).not.toHaveProperty('epss');
    expect(byId['CVE-2099-0003']).not.toHaveProperty('kev');
    expect(report.knownExploited).toBe(1);
    expect(report.gate).toEqual({ failOn: null, failOnKev: false, failed: false });
  });

  it('fails the gate with failOnKev when a remaining finding is known exploited, whatever its severity', () => {
    expect(buildReport(contents(), options({ failOnKev: true })).gate).toEqual({ failOn: null, failOnKev: true, failed: true });
    // High would not fail it alone at Critical; the KEV finding does.
    expect(buildReport(contents(), options({ failOn: 'Critical', failOnKev: true })).gate).toEqual({
      failOn: 'Critical',
      failOnKev: true,
      failed: true,
    });
    expect(buildReport(contents(), options({ failOn: 'Critical' })).gate.failed).toBe(false);
    // Nothing known exploited: the severity decides alone.
    const noKev = contents();
    noKev.packages[0]!.vulnerabilities = noKev.packages[0]!.vulnerabilities.slice(1);
    expect(buildReport(noKev, options({ failOnKev: true })).gate.failed).toBe(false);
    expect(buildReport(noKev, options({ failOn: 'High', failOnKev: true })).gate.failed).toBe(true);
  });

  it('does not fail on a known exploited finding that was set aside: --ignore and --ignore-unfixed apply first', async () => {
    const ignored = buildReport(
      contents(),
      options({ failOnKev: true, ignore: await parseIgnoreFile('- id: CVE-2021-3156\n  reason: sudo is not installed setuid\n', 'f') }),
    );
    expect(ignored.gate).toEqual({ failOn: null, failOnKev: true, failed: false });
    expect(ignored.knownExploited).toBe(0);
    // The ignored finding keeps its risk context in the report.
    expect(ignored.ignored).toEqual([
      expect.objectContaining({
        id: 'CVE-2021-3156',
        kev: expect.objectContaining({ dateAdded: '2022-04-06' }),
        ignored: expect.anything(),
      }),
    ]);

    const unfixed = buildReport(contents(false), options({ failOnKev: true, ignoreUnfixed: true }));
    expect(unfixed.vulnerabilities.map((f) => f.id)).toEqual(['CVE-2099-0003']);
    expect(unfixed.gate.failed).toBe(false);
    // Still there when not set aside.
    expect(buildReport(contents(false), options({ failOnKev: true })).gate.failed).toBe(true);
  });
});

import { createHash } from 'node:crypto';
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { cyclonedxReport } from '../../src/scanner/formats/cyclonedx.js';
import { formatReport, OUTPUT_FORMATS } from '../../src/scanner/formats/index.js';
import { sarifReport } from '../../src/scanner/formats/sarif.js';
import { tableReport } from '../../src/scanner/formats/table.js';
import { ScanReport as ScanReportSchema } from '../../src/scanner/report-schema.js';
import type { Finding, ReportPackage, ScanReport } from '../../src/scanner/report.js';
import { validateCycloneDx, validateSarif } from '../helpers/report-schemas.js';

/**
 * Reports built by hand the way `tarsier scan` fills them: a Debian 10 image (a CVE with NVD
 * CVSS v3.1 metadata and a fix affecting two packages, an unfixed CVE scored with CVSS v2, one
 * without a score, an ignored one), an Alpine and a RHEL image, an image with nothing found, and
 * the Debian image again with risk context: a CVE in CISA's KEV catalog, and EPSS scores.
 */

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const digest = (text: string) => `sha256:${sha256(text)}`;

const BASE_LAYER = digest('debian:10 base layer');
const APP_LAYER = digest('application layer');

function dpkg(name: string, version: string, layer = BASE_LAYER): ReportPackage {
  return {
    name,
    version,
    namespace: 'debian:10',
    versionFormat: 'dpkg',
    purl: `pkg:deb/debian/${name}@${encodeURIComponent(version)}?arch=amd64&distro=debian-10`,
    layer,
  };
}

const OPENSSL = dpkg('openssl', '1.1.1n-0+deb10u1');
const LIBSSL = dpkg('libssl1.1', '1.1.1n-0+deb10u1');
const TAR = dpkg('tar', '1.30+dfsg-6');
const ZLIB = dpkg('zlib1g', '1:1.2.11.dfsg-1+deb10u1');
const CURL = dpkg('curl', '7.64.0-4+deb10u2', APP_LAYER);

const OPENSSL_C_REHASH = 'CVE-2022-1292';
const c_rehash = (pkg: ReportPackage): Finding => ({
  id: OPENSSL_C_REHASH,
  namespace: 'debian:10',
  severity: 'High',
  description: 'The c_rehash script does not properly sanitise shell metacharacters to prevent command injection.',
  link: 'https://security-tracker.debian.org/tracker/CVE-2022-1292',
  package: pkg,
  fixedBy: '1.1.1n-0+deb10u2',
  fixState: 'fixed',
  cvss: { version: '3', score: 9.8, vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H', source: 'NVD' },
  metadata: {
    NVD: { CVSSv3: { Score: 9.8, ExploitabilityScore: 3.9, ImpactScore: 5.9, Vectors: 'AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' } },
  },
});

const TAR_SETUID: Finding = {
  id: 'CVE-2005-2541',
  namespace: 'debian:10',
  severity: 'Negligible',
  description: 'Tar 1.15.1 does not properly warn the user when extracting setuid or setgid files.',
  link: 'https://security-tracker.debian.org/tracker/CVE-2005-2541',
  package: TAR,
  fixedBy: null,
  fixState: 'affected',
  cvss: { version: '2', score: 10, vector: 'AV:N/AC:L/Au:N/C:C/I:C/A:C', source: 'NVD' },
};

const CURL_FTP: Finding = {
  id: 'CVE-2023-28321',
  namespace: 'debian:10',
  severity: 'Medium',
  description: 'An improper certificate validation vulnerability exists in curl <v8.1.0.',
  link: 'https://security-tracker.debian.org/tracker/CVE-2023-28321',
  package: CURL,
  fixedBy: '7.64.0-4+deb10u6',
  fixState: 'fixed',
};

const OPENSSL_DUAL_EC: Finding = {
  id: 'CVE-2007-6755',
  namespace: 'debian:10',
  severity: 'Negligible',
  description: '',
  link: '',
  package: OPENSSL,
  fixedBy: null,
  fixState: 'affected',
};

function debianReport(): ScanReport {
  return {
    schemaVersion: '1.4',
    tool: { name: 'tarsier', version: '0.1.0' },
    createdAt: '2024-06-03T09:15:00Z',
    target: {
      input: 'registry.example.com/shop/api:1.4.2',
      kind: 'registry',
      digest: digest('shop/api:1.4.2 manifest'),
      platform: 'linux/amd64',
      references: ['registry.example.com/shop/api:1.4.2'],
    },
    layers: [BASE_LAYER, APP_LAYER],
    database: {
      mode: 'standalone',
      updatedAt: '2024-06-01T06:00:00Z',
      namespaces: [{ namespace: 'debian:10', state: 'current', updatedAt: '2024-06-01T06:00:00Z', sources: ['debian'] }],
    },
    // zlib1g is listed by both layers (the application layer reinstalled it): one component.
    packages: [OPENSSL, LIBSSL, TAR, ZLIB, CURL, { ...ZLIB, layer: APP_LAYER }],
    vulnerabilities: [c_rehash(OPENSSL), c_rehash(LIBSSL), TAR_SETUID, CURL_FTP, OPENSSL_DUAL_EC],
    ignored: [
      {
        id: 'CVE-2021-22922',
        namespace: 'debian:10',
        severity: 'Low',
        description: 'When curl is instructed to download content using the metalink feature, the contents are verified against a hash.',
        link: 'https://security-tracker.debian.org/tracker/CVE-2021-22922',
        package: CURL,
        fixedBy: null,
        fixState: 'affected',
        ignored: { because: 'ignore-file', reason: 'metalink support is not built in', expires: '2024-12-31' },
      },
    ],
    summary: { High: 1, Medium: 1, Negligible: 2 },
    knownExploited: 0,
    gate: { failOn: 'High', failOnKev: false, failed: true },
  };
}

const BUSYBOX = {
  name: 'busybox',
  version: '1.36.1-r2',
  namespace: 'alpine:v3.18',
  versionFormat: 'apk',
  purl: 'pkg:apk/alpine/busybox@1.36.1-r2?arch=x86_64&distro=3.18.4',
  layer: digest('alpine 3.18 base layer'),
} satisfies ReportPackage;

function alpineReport(): ScanReport {
  return {
    ...debianReport(),
    target: {
      input: 'alpine.tar',
      kind: 'docker-archive',
      digest: digest('alpine image config'),
      platform: null,
      references: ['alpine:3.18'],
    },
    layers: [BUSYBOX.layer],
    database: {
      mode: 'server',
      server: 'https://clair.example.com',
      updatedAt: null,
      namespaces: [{ namespace: 'alpine:v3.18', state: 'missing', updatedAt: null, sources: [] }],
    },
    packages: [BUSYBOX],
    vulnerabilities: [
      {
        id: 'CVE-2023-42363',
        namespace: 'alpine:v3.18',
        severity: 'Medium',
        description: 'A use-after-free vulnerability was discovered in xasprintf function in xfuncs_printf.c:344 in BusyBox v.1.36.1.',
        link: 'https://nvd.nist.gov/vuln/detail/CVE-2023-42363',
        package: BUSYBOX,
        fixedBy: '1.36.1-r7',
        fixState: 'fixed',
        cvss: { version: '3', score: 5.5, vector: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H', source: 'NVD' },
      },
    ],
    ignored: [],
    summary: { Medium: 1 },
    gate: { failOn: null, failOnKev: false, failed: false },
  };
}

const OPENSSL_LIBS = {
  name: 'openssl-libs',
  version: '1:1.1.1k-7.el8_6',
  namespace: 'rhel:8',
  versionFormat: 'rpm',
  purl: 'pkg:rpm/redhat/openssl-libs@1.1.1k-7.el8_6?arch=x86_64&epoch=1&distro=rhel-8.6',
  layer: digest('ubi8 base layer'),
} satisfies ReportPackage;

function rhelReport(): ScanReport {
  return {
    ...debianReport(),
    target: { input: 'oci:ubi8', kind: 'oci-layout', digest: digest('ubi8 manifest'), platform: 'linux/amd64', references: [] },
    layers: [OPENSSL_LIBS.layer],
    packages: [OPENSSL_LIBS],
    vulnerabilities: [
      {
        id: 'CVE-2023-0286',
        namespace: 'rhel:8',
        severity: 'High',
        description: 'A type confusion vulnerability relating to X.400 address processing inside an X.509 GeneralName.',
        link: 'https://access.redhat.com/security/cve/CVE-2023-0286',
        package: OPENSSL_LIBS,
        fixedBy: '1:1.1.1k-9.el8_7',
        fixState: 'fixed',
        cvss: { version: '3', score: 7.4, vector: 'CVSS:3.0/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:N/A:H', source: 'RHEL' },
      },
    ],
    ignored: [],
    summary: { High: 1 },
  };
}

function emptyReport(): ScanReport {
  return {
    ...debianReport(),
    packages: [OPENSSL, LIBSSL, TAR],
    vulnerabilities: [],
    ignored: [],
    summary: {},
    gate: { failOn: 'High', failOnKev: false, failed: false },
  };
}

const SUDO = dpkg('sudo', '1.8.27-1+deb10u2');
const EPSS_DATE = '2024-06-02';

const BARON_SAMEDIT: Finding = {
  id: 'CVE-2021-3156',
  namespace: 'debian:10',
  severity: 'High',
  description: 'Sudo before 1.9.5p2 contains an off-by-one error that can result in a heap-based buffer overflow.',
  link: 'https://security-tracker.debian.org/tracker/CVE-2021-3156',
  package: SUDO,
  fixedBy: '1.8.27-1+deb10u3',
  fixState: 'fixed',
  cvss: { version: '3', score: 7.8, vector: 'CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H', source: 'NVD' },
  epss: { score: 0.97105, percentile: 0.99834, date: EPSS_DATE, cve: 'CVE-2021-3156' },
  kev: { dateAdded: '2022-04-06', dueDate: '2022-04-27', knownRansomwareCampaignUse: 'Unknown', cve: 'CVE-2021-3156' },
};

const epss = (finding: Finding, score: number, percentile: number): Finding => ({
  ...finding,
  epss: { score, percentile, date: EPSS_DATE, cve: finding.id },
});

/** The Debian image with sudo: Baron Samedit is known exploited; c_rehash and curl have EPSS scores, the rest none. */
function riskReport(): ScanReport {
  const report = debianReport();
  return {
    ...report,
    packages: [...report.packages, SUDO],
    vulnerabilities: [
      BARON_SAMEDIT,
      epss(c_rehash(OPENSSL), 0.02153, 0.89371),
      epss(c_rehash(LIBSSL), 0.02153, 0.89371),
      TAR_SETUID,
      epss(CURL_FTP, 0.00043, 0.0971),
      OPENSSL_DUAL_EC,
    ],
    summary: { High: 2, Medium: 1, Negligible: 2 },
    knownExploited: 1,
    gate: { failOn: null, failOnKev: true, failed: true },
  };
}

function withoutKev(report: ScanReport): ScanReport {
  return { ...report, vulnerabilities: report.vulnerabilities.map(({ kev: _kev, ...finding }) => finding), knownExploited: 0 };
}

/** The report without its risk context, to compare against. */
function withoutRisk(report: ScanReport): ScanReport {
  return {
    ...report,
    vulnerabilities: report.vulnerabilities.map(({ epss: _epss, kev: _kev, ...finding }) => finding),
    knownExploited: 0,
  };
}

const REPORTS = { debian: debianReport, alpine: alpineReport, rhel: rhelReport, empty: emptyReport, risk: riskReport };

const ESC = '\u001b';

describe('the hand-built reports', () => {
  it('are scan reports', () => {
    const ajv = new Ajv({ allErrors: true });
    ajvFormats.default(ajv);
    const validate = ajv.compile(ScanReportSchema);
    for (const [name, build] of Object.entries(REPORTS)) expect(validate(build()) ? [] : validate.errors, name).toEqual([]);
  });
});

describe('SARIF', () => {
  it('validates against the SARIF 2.1.0 schema', () => {
    for (const [name, build] of Object.entries(REPORTS)) expect(validateSarif(sarifReport(build())), name).toEqual([]);
  });

  it('catches an invalid document (the validator is live)', () => {
    const doc = sarifReport(debianReport()) as any;
    doc.runs[0].results[0].level = 'critical';
    expect(validateSarif(doc)).not.toEqual([]);
  });

  it('has one run by Tarsier, with the image in its properties', () => {
    const doc = sarifReport(debianReport()) as any;
    expect(doc.$schema).toBe('https://json.schemastore.org/sarif-2.1.0.json');
    expect(doc.version).toBe('2.1.0');
    expect(doc.runs).toHaveLength(1);
    expect(doc.runs[0].tool.driver).toMatchObject({ name: 'Tarsier', version: '0.1.0' });
    expect(doc.runs[0].tool.driver.informationUri).toBeUndefined();
    expect(doc.runs[0].properties).toEqual({
      image: 'registry.example.com/shop/api:1.4.2',
      imageDigest: debianReport().target.digest,
      platform: 'linux/amd64',
      references: ['registry.example.com/shop/api:1.4.2'],
    });
  });

  it('has one rule per vulnerability id and one result per finding', () => {
    const run = (sarifReport(debianReport()) as any).runs[0];
    expect(run.tool.driver.rules.map((r: any) => r.id)).toEqual([OPENSSL_C_REHASH, 'CVE-2005-2541', 'CVE-2023-28321', 'CVE-2007-6755']);
    expect(run.results.map((r: any) => r.ruleId)).toEqual([
      OPENSSL_C_REHASH,
      OPENSSL_C_REHASH,
      'CVE-2005-2541',
      'CVE-2023-28321',
      'CVE-2007-6755',
    ]);
    for (const result of run.results) expect(run.tool.driver.rules[result.ruleIndex].id).toBe(result.ruleId);
    // Ignored findings are not alerts.
    expect(JSON.stringify(run)).not.toContain('CVE-2021-22922');
  });

  it('scores rules by CVSS when there is one, else by severity in GitHub’s buckets', () => {
    const severityOf = (report: ScanReport) =>
      Object.fromEntries((sarifReport(report) as any).runs[0].tool.driver.rules.map((r: any) => [r.id, r.properties['security-severity']]));
    expect(severityOf(debianReport())).toEqual({
      [OPENSSL_C_REHASH]: '9.8',
      'CVE-2005-2541': '10.0',
      'CVE-2023-28321': '5.5',
      'CVE-2007-6755': '0.5',
    });
    expect(severityOf(rhelReport())).toEqual({ 'CVE-2023-0286': '7.4' });

    const mapped = debianReport();
    mapped.vulnerabilities = (['Defcon1', 'Critical', 'High', 'Medium', 'Low', 'Negligible', 'Unknown'] as const).map((severity) => ({
      ...OPENSSL_DUAL_EC,
      id: `TEST-${severity}`,
      severity,
    }));
    expect(severityOf(mapped)).toEqual({
      'TEST-Defcon1': '10.0',
      'TEST-Critical': '9.5',
      'TEST-High': '8.0',
      'TEST-Medium': '5.5',
      'TEST-Low': '2.0',
      'TEST-Negligible': '0.5',
      'TEST-Unknown': '0.0',
    });
    const levels = (sarifReport(mapped) as any).runs[0].results.map((r: any) => r.level);
    expect(levels).toEqual(['error', 'error', 'error', 'warning', 'note', 'note', 'note']);
  });

  it('describes each rule, with help naming every affected package', () => {
    const [rehash, , , dualEc] = (sarifReport(debianReport()) as any).runs[0].tool.driver.rules;
    expect(rehash).toMatchObject({
      name: OPENSSL_C_REHASH,
      shortDescription: { text: 'CVE-2022-1292 (High) in openssl, libssl1.1' },
      fullDescription: { text: c_rehash(OPENSSL).description },
      helpUri: 'https://security-tracker.debian.org/tracker/CVE-2022-1292',
      defaultConfiguration: { level: 'error' },
      properties: { tags: ['vulnerability', 'security', 'High'] },
    });
    expect(rehash.help.markdown).toContain('| openssl | 1.1.1n-0+deb10u1 | debian:10 | 1.1.1n-0+deb10u2 |');
    expect(rehash.help.markdown).toContain('| libssl1.1 | 1.1.1n-0+deb10u1 | debian:10 | 1.1.1n-0+deb10u2 |');
    expect(rehash.help.markdown).toContain('[CVE-2022-1292](https://security-tracker.debian.org/tracker/CVE-2022-1292)');
    expect(rehash.help.text).toContain('libssl1.1 1.1.1n-0+deb10u1 (debian:10): fixed in 1.1.1n-0+deb10u2');
    // No link: no helpUri; no description: the short one stands in.
    expect(dualEc.helpUri).toBeUndefined();
    expect(dualEc.fullDescription.text).toBe('CVE-2007-6755 (Negligible) in openssl');
    expect(dualEc.help.text).toContain('openssl 1.1.1n-0+deb10u1 (debian:10): no fix yet');
  });

  it('keeps rule descriptions within GitHub’s 1024 characters', () => {
    const report = debianReport();
    report.vulnerabilities = [{ ...CURL_FTP, description: 'x'.repeat(5000) }];
    const [rule] = (sarifReport(report) as any).runs[0].tool.driver.rules;
    expect(rule.fullDescription.text).toHaveLength(1024);
    expect(validateSarif(sarifReport(report))).toEqual([]);
  });

  it('places each result in the package database of the image, with the image and layer as logical locations', () => {
    const report = debianReport();
    const image = `registry.example.com/shop/api:1.4.2@${report.target.digest}`;
    const results = (sarifReport(report) as any).runs[0].results;
    expect(results[0].message.text).toBe(
      'openssl 1.1.1n-0+deb10u1 (debian:10) is affected by CVE-2022-1292 (High); fixed in 1.1.1n-0+deb10u2',
    );
    expect(results[2].message.text).toBe('tar 1.30+dfsg-6 (debian:10) is affected by CVE-2005-2541 (Negligible); no fix yet');
    expect(results[3].locations).toEqual([
      {
        physicalLocation: {
          artifactLocation: { uri: 'var/lib/dpkg/status' },
          region: { startLine: 1, startColumn: 1, endLine: 1, endColumn: 1 },
        },
        logicalLocations: [
          { name: 'registry.example.com/shop/api:1.4.2', fullyQualifiedName: image, kind: 'image' },
          { name: APP_LAYER, fullyQualifiedName: `${image}/${APP_LAYER}`, kind: 'layer' },
        ],
        message: { text: `curl 7.64.0-4+deb10u2, added by layer ${APP_LAYER} of ${image}` },
      },
    ]);
    const uriOf = (r: ScanReport) => (sarifReport(r) as any).runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri;
    expect(uriOf(alpineReport())).toBe('lib/apk/db/installed');
    expect(uriOf(rhelReport())).toBe('var/lib/rpm');
  });

  it('fingerprints a result by id, package, namespace and image name, not by digest', () => {
    const fingerprints = (report: ScanReport) =>
      (sarifReport(report) as any).runs[0].results.map((r: any) => r.partialFingerprints['tarsier/v1']);
    const before = fingerprints(debianReport());
    expect(before[0]).toBe(sha256('CVE-2022-1292|openssl|debian:10|registry.example.com/shop/api:1.4.2'));
    expect(new Set(before).size).toBe(5);

    const rebuilt = debianReport();
    rebuilt.target.digest = digest('shop/api:1.4.3 manifest');
    expect(fingerprints(rebuilt)).toEqual(before);

    const renamed = debianReport();
    renamed.target.input = 'registry.example.com/shop/web:1.4.2';
    expect(fingerprints(renamed)[0]).not.toBe(before[0]);
  });

  it('leaves security-severity to CVSS: EPSS and KEV do not change it', () => {
    const severityOf = (report: ScanReport) =>
      Object.fromEntries((sarifReport(report) as any).runs[0].tool.driver.rules.map((r: any) => [r.id, r.properties['security-severity']]));
    expect(severityOf(riskReport())).toEqual(severityOf(withoutRisk(riskReport())));
    expect(severityOf(riskReport())).toMatchObject({ 'CVE-2021-3156': '7.8', [OPENSSL_C_REHASH]: '9.8', 'CVE-2023-28321': '5.5' });
    const levels = (report: ScanReport) => (sarifReport(report) as any).runs[0].results.map((r: any) => r.level);
    expect(levels(riskReport())).toEqual(levels(withoutRisk(riskReport())));
  });

  it('gives EPSS and KEV in the rule’s properties, and says known exploited in its help and each result', () => {
    const doc = sarifReport(riskReport()) as any;
    expect(validateSarif(doc)).toEqual([]);
    const [sudo, rehash, tar] = doc.runs[0].tool.driver.rules;
    expect(sudo.properties).toEqual({
      tags: ['vulnerability', 'security', 'High', 'known-exploited'],
      'security-severity': '7.8',
      epss: 0.97105,
      epssPercentile: 0.99834,
      epssDate: EPSS_DATE,
      epssCve: 'CVE-2021-3156',
      kev: true,
      kevDateAdded: '2022-04-06',
      kevDueDate: '2022-04-27',
      kevKnownRansomwareCampaignUse: 'Unknown',
      kevCve: 'CVE-2021-3156',
    });
    expect(sudo.shortDescription.text).toBe('CVE-2021-3156 (High, known exploited) in sudo');
    expect(sudo.help.text.split('\n').slice(0, 5)).toEqual([
      'CVE-2021-3156 (High)',
      '',
      'Known exploited (CISA KEV, added 2022-04-06); remediation due 2022-04-27',
      'EPSS 97.1% (p99), scored 2024-06-02',
      '',
    ]);
    expect(sudo.help.markdown).toContain(
      '\n\n**Known exploited (CISA KEV, added 2022-04-06); remediation due 2022-04-27**  \nEPSS 97.1% (p99), scored 2024-06-02\n\n',
    );
    expect(rehash.properties).toEqual({
      tags: ['vulnerability', 'security', 'High'],
      'security-severity': '9.8',
      epss: 0.02153,
      epssPercentile: 0.89371,
      epssDate: EPSS_DATE,
      epssCve: OPENSSL_C_REHASH,
    });
    expect(rehash.help.text).toContain('\nEPSS 2.2% (p89), scored 2024-06-02\n');
    expect(rehash.help.text).not.toContain('Known exploited');
    expect(tar.properties).toEqual({ tags: ['vulnerability', 'security', 'Negligible'], 'security-severity': '10.0' });
    expect(tar.help.text).not.toContain('EPSS');

    const messages = doc.runs[0].results.map((r: any) => r.message.text);
    expect(messages[0]).toBe(
      'Known exploited (CISA KEV, added 2022-04-06): sudo 1.8.27-1+deb10u2 (debian:10) is affected by CVE-2021-3156 (High); fixed in 1.8.27-1+deb10u3',
    );
    expect(messages.slice(1).filter((m: string) => m.includes('Known exploited'))).toEqual([]);
  });

  it('names the CVE an advisory’s EPSS and KEV come from, and leaves out a KEV entry’s empty due date', () => {
    const report = riskReport();
    const cve = 'CVE-2021-3156';
    report.vulnerabilities = [
      {
        ...BARON_SAMEDIT,
        id: 'DLA-2534-1',
        epss: { ...BARON_SAMEDIT.epss!, cve },
        kev: { ...BARON_SAMEDIT.kev!, dueDate: '', knownRansomwareCampaignUse: 'Known', cve },
      },
    ];
    const doc = sarifReport(report) as any;
    expect(validateSarif(doc)).toEqual([]);
    const [rule] = doc.runs[0].tool.driver.rules;
    expect(rule.properties).toMatchObject({ epssCve: cve, kevCve: cve, kevKnownRansomwareCampaignUse: 'Known' });
    expect(rule.properties).not.toHaveProperty('kevDueDate');
    expect(rule.help.text).toContain(
      '\nKnown exploited (CISA KEV, added 2022-04-06), through CVE-2021-3156; known to be used in ransomware campaigns\n',
    );
    expect(rule.help.text).toContain('\nEPSS 97.1% (p99), scored 2024-06-02, through CVE-2021-3156\n');
  });

  it('writes an empty run for an image with nothing found', () => {
    const run = (sarifReport(emptyReport()) as any).runs[0];
    expect(run.tool.driver.rules).toEqual([]);
    expect(run.results).toEqual([]);
  });
});

describe('CycloneDX', () => {
  it('validates against the CycloneDX 1.6 schema', () => {
    for (const [name, build] of Object.entries(REPORTS)) expect(validateCycloneDx(cyclonedxReport(build())), name).toEqual([]);
  });

  it('catches an invalid document (the validator is live)', () => {
    const bom = cyclonedxReport(debianReport()) as any;
    bom.vulnerabilities[0].ratings[0].severity = 'urgent';
    expect(validateCycloneDx(bom)).not.toEqual([]);
  });

  it('describes the image and the tool', () => {
    const report = debianReport();
    const bom = cyclonedxReport(report) as any;
    expect(bom).toMatchObject({ bomFormat: 'CycloneDX', specVersion: '1.6', version: 1 });
    expect(bom.serialNumber).toMatch(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect((cyclonedxReport(report) as any).serialNumber).not.toBe(bom.serialNumber);
    expect(bom.metadata).toEqual({
      timestamp: '2024-06-03T09:15:00Z',
      tools: { components: [{ type: 'application', name: 'tarsier', version: '0.1.0' }] },
      component: {
        type: 'container',
        'bom-ref': report.target.digest,
        name: 'registry.example.com/shop/api:1.4.2',
        version: report.target.digest,
        properties: [
          { name: 'tarsier:platform', value: 'linux/amd64' },
          { name: 'tarsier:reference', value: 'registry.example.com/shop/api:1.4.2' },
        ],
      },
    });
    const serialNumber = 'urn:uuid:3e671687-395b-41f5-a30f-a58921a69b79';
    expect((cyclonedxReport(report, { serialNumber }) as any).serialNumber).toBe(serialNumber);
  });

  it('lists every package once, by purl, with its layer and namespace', () => {
    const bom = cyclonedxReport(debianReport()) as any;
    expect(bom.components.map((c: any) => c.purl)).toEqual([
      'pkg:deb/debian/openssl@1.1.1n-0%2Bdeb10u1?arch=amd64&distro=debian-10',
      'pkg:deb/debian/libssl1.1@1.1.1n-0%2Bdeb10u1?arch=amd64&distro=debian-10',
      'pkg:deb/debian/tar@1.30%2Bdfsg-6?arch=amd64&distro=debian-10',
      'pkg:deb/debian/zlib1g@1%3A1.2.11.dfsg-1%2Bdeb10u1?arch=amd64&distro=debian-10',
      'pkg:deb/debian/curl@7.64.0-4%2Bdeb10u2?arch=amd64&distro=debian-10',
    ]);
    expect(bom.components[4]).toEqual({
      type: 'library',
      'bom-ref': CURL.purl,
      name: 'curl',
      version: '7.64.0-4+deb10u2',
      purl: CURL.purl,
      properties: [
        { name: 'tarsier:layer', value: APP_LAYER },
        { name: 'tarsier:namespace', value: 'debian:10' },
        { name: 'tarsier:version-format', value: 'dpkg' },
      ],
    });
    // The first layer listing zlib1g is the one recorded.
    expect(bom.components[3].properties[0]).toEqual({ name: 'tarsier:layer', value: BASE_LAYER });
    expect(bom.dependencies).toEqual([{ ref: debianReport().target.digest, dependsOn: bom.components.map((c: any) => c['bom-ref']) }]);
  });

  it('has one vulnerability per id, whose affects name components', () => {
    for (const build of Object.values(REPORTS)) {
      const bom = cyclonedxReport(build()) as any;
      const refs = new Set(bom.components.map((c: any) => c['bom-ref']));
      for (const v of bom.vulnerabilities) for (const a of v.affects) expect(refs.has(a.ref), `${v.id} → ${a.ref}`).toBe(true);
    }
    const bom = cyclonedxReport(debianReport()) as any;
    expect(bom.vulnerabilities.map((v: any) => v.id)).toEqual([OPENSSL_C_REHASH, 'CVE-2005-2541', 'CVE-2023-28321', 'CVE-2007-6755']);
    expect(bom.vulnerabilities[0]).toEqual({
      'bom-ref': OPENSSL_C_REHASH,
      id: OPENSSL_C_REHASH,
      source: { name: 'debian:10', url: 'https://security-tracker.debian.org/tracker/CVE-2022-1292' },
      ratings: [
        {
          source: { name: 'NVD' },
          score: 9.8,
          severity: 'critical',
          method: 'CVSSv31',
          vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H',
        },
        { source: { name: 'debian:10' }, severity: 'high' },
      ],
      description: c_rehash(OPENSSL).description,
      recommendation: 'Upgrade openssl to 1.1.1n-0+deb10u2; Upgrade libssl1.1 to 1.1.1n-0+deb10u2',
      advisories: [{ url: 'https://security-tracker.debian.org/tracker/CVE-2022-1292' }],
      affects: [
        { ref: OPENSSL.purl, versions: [{ version: '1.1.1n-0+deb10u1', status: 'affected' }] },
        { ref: LIBSSL.purl, versions: [{ version: '1.1.1n-0+deb10u1', status: 'affected' }] },
      ],
    });
  });

  it('rates by CVSS version and by the distribution’s severity', () => {
    const ratingsOf = (report: ScanReport) => (cyclonedxReport(report) as any).vulnerabilities.map((v: any) => v.ratings);
    const [, tar, curl, dualEc] = ratingsOf(debianReport());
    expect(tar).toEqual([
      { source: { name: 'NVD' }, score: 10, severity: 'high', method: 'CVSSv2', vector: 'AV:N/AC:L/Au:N/C:C/I:C/A:C' },
      { source: { name: 'debian:10' }, severity: 'info' },
    ]);
    expect(curl).toEqual([{ source: { name: 'debian:10' }, severity: 'medium' }]);
    expect(dualEc).toEqual([{ source: { name: 'debian:10' }, severity: 'info' }]);
    expect(ratingsOf(rhelReport())[0]).toEqual([
      { source: { name: 'RHEL' }, score: 7.4, severity: 'high', method: 'CVSSv3', vector: 'CVSS:3.0/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:N/A:H' },
      { source: { name: 'rhel:8' }, severity: 'high' },
    ]);
    const alpine = (cyclonedxReport(alpineReport()) as any).vulnerabilities[0];
    expect(alpine.ratings).toEqual([
      {
        source: { name: 'NVD' },
        score: 5.5,
        severity: 'medium',
        method: 'CVSSv31',
        vector: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H',
      },
      { source: { name: 'alpine:v3.18' }, severity: 'medium' },
    ]);
    expect(alpine.recommendation).toBe('Upgrade busybox to 1.36.1-r7');

    const severities = (['Defcon1', 'Critical', 'High', 'Medium', 'Low', 'Negligible', 'Unknown'] as const).map((severity) => {
      const report = debianReport();
      report.vulnerabilities = [{ ...CURL_FTP, severity }];
      return (cyclonedxReport(report) as any).vulnerabilities[0].ratings[0].severity;
    });
    expect(severities).toEqual(['critical', 'critical', 'high', 'medium', 'low', 'info', 'unknown']);
  });

  it('leaves out what a finding does not have: description, link, fix', () => {
    const dualEc = (cyclonedxReport(debianReport()) as any).vulnerabilities[3];
    expect(dualEc).toEqual({
      'bom-ref': 'CVE-2007-6755',
      id: 'CVE-2007-6755',
      source: { name: 'debian:10' },
      ratings: [{ source: { name: 'debian:10' }, severity: 'info' }],
      affects: [{ ref: OPENSSL.purl, versions: [{ version: '1.1.1n-0+deb10u1', status: 'affected' }] }],
    });
  });

  it('gives EPSS and KEV as the vulnerability’s properties', () => {
    const bom = cyclonedxReport(riskReport()) as any;
    expect(validateCycloneDx(bom)).toEqual([]);
    const [sudo, rehash, tar, curl] = bom.vulnerabilities;
    expect(sudo.id).toBe('CVE-2021-3156');
    expect(sudo.properties).toEqual([
      { name: 'tarsier:epss:score', value: '0.97105' },
      { name: 'tarsier:epss:percentile', value: '0.99834' },
      { name: 'tarsier:epss:date', value: EPSS_DATE },
      { name: 'tarsier:epss:cve', value: 'CVE-2021-3156' },
      { name: 'tarsier:kev:dateAdded', value: '2022-04-06' },
      { name: 'tarsier:kev:dueDate', value: '2022-04-27' },
      { name: 'tarsier:kev:knownRansomwareCampaignUse', value: 'Unknown' },
      { name: 'tarsier:kev:cve', value: 'CVE-2021-3156' },
    ]);
    // One vulnerability for the two packages c_rehash affects, with its score once.
    expect(rehash.properties).toEqual([
      { name: 'tarsier:epss:score', value: '0.02153' },
      { name: 'tarsier:epss:percentile', value: '0.89371' },
      { name: 'tarsier:epss:date', value: EPSS_DATE },
      { name: 'tarsier:epss:cve', value: OPENSSL_C_REHASH },
    ]);
    expect(curl.properties[0]).toEqual({ name: 'tarsier:epss:score', value: '0.00043' });
    expect(tar).not.toHaveProperty('properties');
    // EPSS is no rating: the ratings are those of the report without risk context.
    const ratings = (report: ScanReport) => (cyclonedxReport(report) as any).vulnerabilities.map((v: any) => v.ratings);
    expect(ratings(riskReport())).toEqual(ratings(withoutRisk(riskReport())));
  });

  it('lists the packages of an image with nothing found, and no vulnerability', () => {
    const bom = cyclonedxReport(emptyReport()) as any;
    expect(bom.components.map((c: any) => c.name)).toEqual(['openssl', 'libssl1.1', 'tar']);
    expect(bom.vulnerabilities).toEqual([]);
  });
});

describe('table', () => {
  const short = (layer: string) => layer.slice('sha256:'.length, 'sha256:'.length + 12);

  it('groups findings by package, most severe first, with aligned columns and a summary', () => {
    const report = debianReport();
    expect(tableReport(report, { color: false })).toBe(
      [
        'Target:    registry.example.com/shop/api:1.4.2 (registry)',
        `Digest:    ${report.target.digest}`,
        'Platform:  linux/amd64',
        'Database:  standalone',
        'Data:      debian:10: updated 2024-06-01T06:00:00Z (2 days before this scan, from debian)',
        '',
        '  VULNERABILITY   SEVERITY    FIXED BY          LINK',
        '',
        `libssl1.1 1.1.1n-0+deb10u1 (debian:10, layer ${short(BASE_LAYER)})`,
        '  CVE-2022-1292   High        1.1.1n-0+deb10u2  https://security-tracker.debian.org/tracker/CVE-2022-1292',
        '',
        `openssl 1.1.1n-0+deb10u1 (debian:10, layer ${short(BASE_LAYER)})`,
        '  CVE-2022-1292   High        1.1.1n-0+deb10u2  https://security-tracker.debian.org/tracker/CVE-2022-1292',
        '  CVE-2007-6755   Negligible  no fix',
        '',
        `curl 7.64.0-4+deb10u2 (debian:10, layer ${short(APP_LAYER)})`,
        '  CVE-2023-28321  Medium      7.64.0-4+deb10u6  https://security-tracker.debian.org/tracker/CVE-2023-28321',
        '',
        `tar 1.30+dfsg-6 (debian:10, layer ${short(BASE_LAYER)})`,
        '  CVE-2005-2541   Negligible  no fix            https://security-tracker.debian.org/tracker/CVE-2005-2541',
        '',
        '4 vulnerabilities: 1 High, 1 Medium, 2 Negligible (2 fixable, 0 known exploited); 1 ignored',
        '',
      ].join('\n'),
    );
  });

  it('sorts a package’s findings by severity, then id', () => {
    const report = debianReport();
    report.vulnerabilities = [
      { ...OPENSSL_DUAL_EC, id: 'CVE-2024-0002', severity: 'Low' },
      { ...OPENSSL_DUAL_EC, id: 'CVE-2024-0003', severity: 'Critical' },
      { ...OPENSSL_DUAL_EC, id: 'CVE-2024-0001', severity: 'Low' },
      { ...OPENSSL_DUAL_EC, id: 'CVE-2023-9999', severity: 'Defcon1' },
    ];
    report.summary = { Defcon1: 1, Critical: 1, Low: 2 };
    report.ignored = [];
    const rows = tableReport(report, { color: false })
      .split('\n')
      .filter((line) => line.startsWith('  CVE-'))
      .map((line) => line.trim().split(/\s+/).slice(0, 2).join(' '));
    expect(rows).toEqual(['CVE-2023-9999 Defcon1', 'CVE-2024-0003 Critical', 'CVE-2024-0001 Low', 'CVE-2024-0002 Low']);
    expect(tableReport(report, { color: false })).toContain(
      '\n4 vulnerabilities: 1 Defcon1, 1 Critical, 2 Low (0 fixable, 0 known exploited)\n',
    );
  });

  it('colours severities only when asked', () => {
    const report = debianReport();
    report.vulnerabilities.push({ ...CURL_FTP, id: 'CVE-2023-38545', severity: 'Critical' });
    const plain = tableReport(report, { color: false });
    expect(plain).not.toContain(ESC);
    const colored = tableReport(report, { color: true });
    expect(colored).toContain(`${ESC}[1;31mCritical${ESC}[0m`);
    expect(colored).toContain(`${ESC}[31mHigh${ESC}[0m`);
    expect(colored).toContain(`${ESC}[33mMedium${ESC}[0m`);
    expect(colored).toContain('  Negligible  no fix');
    expect(colored).not.toMatch(new RegExp(`${ESC}\\[[0-9;]*mNegligible`));
    // Colour codes aside, the same text.
    expect(colored.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '')).toBe(plain);
  });

  it('shows EPSS and KEV per finding when a finding has them, and counts the known exploited', () => {
    const report = riskReport();
    const text = tableReport(report, { color: false });
    expect(text.split('\n').slice(6, 12)).toEqual([
      '  VULNERABILITY   SEVERITY    FIXED BY          EPSS         KNOWN EXPLOITED  LINK',
      '',
      `libssl1.1 1.1.1n-0+deb10u1 (debian:10, layer ${short(BASE_LAYER)})`,
      '  CVE-2022-1292   High        1.1.1n-0+deb10u2  2.2% (p89)                    https://security-tracker.debian.org/tracker/CVE-2022-1292',
      '',
      `openssl 1.1.1n-0+deb10u1 (debian:10, layer ${short(BASE_LAYER)})`,
    ]);
    expect(text).toContain(
      `\nsudo 1.8.27-1+deb10u2 (debian:10, layer ${short(BASE_LAYER)})\n` +
        '  CVE-2021-3156   High        1.8.27-1+deb10u3  97.1% (p99)  KEV 2022-04-06   https://security-tracker.debian.org/tracker/CVE-2021-3156\n',
    );
    expect(text).toContain('\n  CVE-2023-28321  Medium      7.64.0-4+deb10u6  <0.1% (p9)                    https://');
    expect(text).toContain('\n  CVE-2005-2541   Negligible  no fix                                          https://');
    expect(text).toContain('\n5 vulnerabilities: 2 High, 1 Medium, 2 Negligible (3 fixable, 1 known exploited); 1 ignored\n');

    // EPSS alone: no KEV column.
    expect(tableReport(withoutKev(report), { color: false })).toContain(
      '  VULNERABILITY   SEVERITY    FIXED BY          EPSS         LINK\n',
    );
    // Ransomware use, when CISA knows of it.
    report.vulnerabilities[0] = { ...BARON_SAMEDIT, kev: { ...BARON_SAMEDIT.kev!, knownRansomwareCampaignUse: 'Known' } };
    expect(tableReport(report, { color: false })).toContain('  97.1% (p99)  KEV 2022-04-06, ransomware  https://');
  });

  it('colours the KEV marker only when asked', () => {
    const plain = tableReport(riskReport(), { color: false });
    expect(plain).not.toContain(ESC);
    const colored = tableReport(riskReport(), { color: true });
    expect(colored).toContain(`  97.1% (p99)  ${ESC}[1;31mKEV 2022-04-06${ESC}[0m   https://`);
    expect(colored.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '')).toBe(plain);
  });

  it('says when nothing was found, and what was ignored', () => {
    const report = emptyReport();
    expect(tableReport(report, { color: true }).split('\n').slice(-3)).toEqual(['', 'No vulnerabilities found (3 packages)', '']);
    report.ignored = debianReport().ignored;
    expect(tableReport(report, { color: false })).toContain('\nNo vulnerabilities found (3 packages); 1 ignored\n');
  });

  it('shows an unknown platform and a namespace without data (a scan allowed to go on without it)', () => {
    const text = tableReport(alpineReport(), { color: false });
    expect(text).toContain('Target:    alpine.tar (docker-archive)\n');
    expect(text).toContain('Platform:  unknown\n');
    expect(text).toContain(
      'Database:  server https://clair.example.com\nData:      alpine:v3.18: NO DATA (its packages were not matched)\n',
    );
    expect(text).toContain('\n1 vulnerability: 1 Medium (1 fixable, 0 known exploited)\n');
  });
});

describe('formatReport', () => {
  it('knows the four formats', () => {
    expect(OUTPUT_FORMATS).toEqual(['table', 'json', 'sarif', 'cyclonedx']);
  });

  it('writes the report itself as JSON', () => {
    const text = formatReport(debianReport(), 'json', { color: true });
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual(debianReport());
  });

  it('writes EPSS and KEV in the JSON report as the report has them, valid against its schema', () => {
    const validate = new Ajv({ allErrors: true });
    ajvFormats.default(validate);
    const check = validate.compile(ScanReportSchema);
    const written = JSON.parse(formatReport(riskReport(), 'json', { color: false }));
    expect(written).toEqual(riskReport());
    expect(check(written) ? [] : check.errors).toEqual([]);
    expect(written.vulnerabilities[0]).toMatchObject({ epss: BARON_SAMEDIT.epss, kev: BARON_SAMEDIT.kev });
    expect(written).toMatchObject({ schemaVersion: '1.4', knownExploited: 1, gate: { failOn: null, failOnKev: true, failed: true } });
    // The schema holds the new fields to their shape.
    const extra = riskReport();
    extra.vulnerabilities[0] = { ...BARON_SAMEDIT, kev: { ...BARON_SAMEDIT.kev!, exploited: true } as never };
    expect(check(JSON.parse(formatReport(extra, 'json', { color: false })))).toBe(false);
  });

  it('writes SARIF and CycloneDX as pretty JSON and the table as text', () => {
    const sarif = formatReport(debianReport(), 'sarif', { color: true });
    expect(sarif.startsWith('{\n  "$schema": "https://json.schemastore.org/sarif-2.1.0.json"')).toBe(true);
    expect(JSON.parse(sarif)).toEqual(sarifReport(debianReport()));
    const bom = JSON.parse(formatReport(debianReport(), 'cyclonedx', { color: true }));
    expect(validateCycloneDx(bom)).toEqual([]);
    expect({ ...bom, serialNumber: undefined }).toEqual({ ...cyclonedxReport(debianReport()), serialNumber: undefined });
    expect(formatReport(debianReport(), 'table', { color: false })).toBe(tableReport(debianReport(), { color: false }));
    expect(formatReport(debianReport(), 'table', { color: true })).toContain(ESC);
  });
});

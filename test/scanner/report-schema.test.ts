/**
 * The published schema of `tarsier scan --format json`, docs/scan-report.schema.json: the same
 * document as the TypeBox schema the report is built against (so the file cannot drift from the
 * code), and usable as it is by a JSON Schema validator: a report validates, one without `gate`
 * does not.
 */
import { readFile } from 'node:fs/promises';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { SCAN_REPORT_VERSION } from '../../src/scanner/report.js';
import { ScanReport } from '../../src/scanner/report-schema.js';

const SCHEMA_FILE = new URL('../../docs/scan-report.schema.json', import.meta.url);

const REGENERATE =
  'docs/scan-report.schema.json differs from ScanReport in src/scanner/report-schema.ts; regenerate it with\n' +
  `  node --import tsx -e "import('./src/scanner/report-schema.ts').then((m) => process.stdout.write(JSON.stringify(m.ScanReport, null, 2) + '\\n'))" > docs/scan-report.schema.json`;

const LAYER = 'sha256:2c0d8a4b3e6f1a9c7b5d3e1f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b';

/** A small report as a server-mode scan of a docker save archive writes it. */
function sampleReport(): Record<string, unknown> {
  const pkg = {
    name: 'openssl',
    version: '1.1.1n-0+deb10u3',
    namespace: 'debian:10',
    versionFormat: 'dpkg',
    purl: 'pkg:deb/debian/openssl@1.1.1n-0%2Bdeb10u3?distro=debian-10',
    layer: LAYER,
  };
  const finding = {
    id: 'CVE-2099-0001',
    namespace: 'debian:10',
    severity: 'High',
    description: 'CVE-2099-0001 in openssl',
    link: 'https://security-tracker.debian.org/tracker/CVE-2099-0001',
    package: pkg,
    fixedBy: '1.1.1n-0+deb10u4',
    fixState: 'fixed',
    cvss: { version: '3', score: 7.5, vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H', source: 'NVD' },
    epss: { score: 0.42, percentile: 0.97, date: '2026-11-23', cve: 'CVE-2099-0001' },
    kev: { dateAdded: '2026-11-20', dueDate: '2026-12-11', knownRansomwareCampaignUse: 'Unknown', cve: 'CVE-2099-0001' },
  };
  return {
    schemaVersion: SCAN_REPORT_VERSION,
    tool: { name: 'tarsier', version: '0.1.0' },
    createdAt: '2026-11-24T10:00:00.000Z',
    target: {
      input: 'image.tar',
      kind: 'docker-archive',
      digest: 'sha256:9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0',
      platform: 'linux/amd64',
      references: ['team/app:1.0'],
    },
    layers: [LAYER],
    database: {
      mode: 'server',
      server: 'http://127.0.0.1:6060',
      updatedAt: '2026-11-24T06:00:00.000Z',
      namespaces: [{ namespace: 'debian:10', state: 'current', updatedAt: '2026-11-24T06:00:00.000Z', sources: ['debian'] }],
    },
    packages: [pkg],
    vulnerabilities: [finding],
    ignored: [
      {
        ...finding,
        id: 'CVE-2099-0002',
        severity: 'Medium',
        fixedBy: null,
        fixState: 'affected',
        ignored: { because: 'ignore-file', reason: 'not reachable in this image', expires: '2027-01-31' },
      },
    ],
    summary: { High: 1 },
    knownExploited: 1,
    gate: { failOn: 'High', failOnKev: true, failed: true },
  };
}

async function publishedSchema(): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
}

describe('docs/scan-report.schema.json', () => {
  it('is the TypeBox schema the report is built against', async () => {
    expect(await publishedSchema(), REGENERATE).toEqual(JSON.parse(JSON.stringify(ScanReport)));
  });

  it('validates a report with a standard JSON Schema validator, and refuses one without gate', async () => {
    const ajv = new Ajv({ allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile(await publishedSchema());

    const report = sampleReport();
    expect(validate(report), JSON.stringify(validate.errors)).toBe(true);

    const { gate: _gate, ...withoutGate } = report;
    expect(validate(withoutGate)).toBe(false);
    expect(validate.errors).toContainEqual(expect.objectContaining({ keyword: 'required', params: { missingProperty: 'gate' } }));

    // A field the schema does not know is refused: new fields come with a new schemaVersion.
    expect(validate({ ...report, extra: true })).toBe(false);
    expect(validate({ ...report, createdAt: 'yesterday' })).toBe(false);
    // 1.1's fields are checked as strictly: an EPSS score is a probability.
    const [finding] = report.vulnerabilities as Record<string, unknown>[];
    expect(validate({ ...report, vulnerabilities: [{ ...finding, epss: { ...(finding!.epss as object), score: 42 } }] })).toBe(false);
    expect(validate({ ...report, gate: { failOn: null, failed: false } })).toBe(false);
  });
});

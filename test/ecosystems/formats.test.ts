/**
 * A package format is a folder and one row of the format catalog: a format added as a row (here a
 * test format, "numeric", whose versions are whole numbers compared as numbers) is a format
 * everywhere, with nothing else edited. Each check fails when a place keeps a list of its own.
 */
import { describe, expect, it, vi } from 'vitest';
import type { LayerFiles, PackageLister } from '../../src/model/indexing.js';
import type { VersionFormat } from '../../src/model/version-format.js';

const numeric = vi.hoisted(() => {
  const versions = {
    name: 'numeric',
    // As numbers: 9 before 10, where a comparison of strings would put "10" first.
    compare: (a: string, b: string) => Math.sign(Number(a) - Number(b)) as -1 | 0 | 1,
    valid: (v: string) => /^\d+$/.test(v),
    revision: 1,
  } satisfies VersionFormat;
  const database = 'var/lib/numeric/db';
  const lister = {
    name: 'numeric',
    version: 1,
    format: versions.name,
    databasePaths: [database],
    wants: (path: string) => path === database,
    list: (files: LayerFiles) =>
      files
        .get(database)
        ?.toString()
        .trim()
        .split('\n')
        .map((line) => {
          const [name = '', version = ''] = line.split(' ');
          return { name, version };
        }),
  } satisfies PackageLister;
  return { versions, lister, purlType: 'num', databaseLocation: database };
});

vi.mock('../../src/ecosystems/formats.js', async (importOriginal) => {
  const catalog = await importOriginal<typeof import('../../src/ecosystems/formats.js')>();
  return { ...catalog, PACKAGE_FORMATS: [...catalog.PACKAGE_FORMATS, numeric] };
});

const { APPLICATION_LISTERS, FILE_LISTERS, INDEXER_VERSION, PACKAGE_LISTERS, NAMESPACE_DETECTORS, VERSION_FORMATS, versionFormat } =
  await import('../../src/ecosystems/index.js');
const { MATCHING } = await import('../../src/ecosystems/matching.js');
const { scanContents } = await import('../../src/indexer/scan.js');
const { packageUrl } = await import('../../src/scanner/purl.js');
const { FeatureInput } = await import('../../src/api/v1/schemas.js');
const { ReportPackage } = await import('../../src/scanner/report-schema.js');
const { sarifReport } = await import('../../src/scanner/formats/sarif.js');
const { json, testApp } = await import('../helpers/app.js');

const postFix = (t: Awaited<ReturnType<typeof testApp>>, format: string, version: string) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/namespaces/acme%3A1/vulnerabilities',
    payload: { Vulnerability: { Name: 'X-1', Severity: 'Low', FixedIn: [{ Name: 'widget', VersionFormat: format, Version: version }] } },
  });

describe('a format added as a catalog row', () => {
  it('orders versions for matching with its own comparator', () => {
    expect(VERSION_FORMATS).toContain(numeric.versions);
    expect(versionFormat('numeric')).toBe(numeric.versions);
    const match = MATCHING.match('numeric');
    const fix = { fixed_version: '10' };
    expect(match([fix], { version: '9', arches: [] })).toBe(fix);
    expect(match([fix], { version: '10', arches: [] })).toBeUndefined();
  });

  it('names its packages by its purl type', () => {
    expect(packageUrl({ name: 'widget', version: '9', namespace: 'acme:1', versionFormat: 'numeric' })).toBe(
      'pkg:num/acme/widget@9?distro=acme-1',
    );
  });

  it('has its lister run by the indexer and counted in the indexer version', () => {
    expect(PACKAGE_LISTERS).toContain(numeric.lister);
    const files = new Map([['var/lib/numeric/db', Buffer.from('widget 9\n')]]);
    const scan = scanContents({ files, whiteouts: { deleted: new Set(), opaque: new Set() } }, PACKAGE_LISTERS, NAMESPACE_DETECTORS);
    expect(scan.packageDbs['numeric']).toEqual({ state: 'present', packages: [{ name: 'widget', version: '9' }] });
    const parts = [...PACKAGE_LISTERS, ...APPLICATION_LISTERS, ...FILE_LISTERS, ...NAMESPACE_DETECTORS];
    expect(INDEXER_VERSION).toBe(parts.reduce((sum, part) => sum + part.version, 0));
  });

  it('is named where the API and the report describe version formats', () => {
    expect(FeatureInput.properties.VersionFormat.description).toMatch(
      /^dpkg, rpm, apk, numeric, semver, pep440, go, maven, gem, nuget or composer;/,
    );
    expect(ReportPackage.properties.versionFormat.description).toBe(
      'How its versions compare: dpkg, rpm, apk, numeric, semver, pep440, go, maven, gem, nuget or composer.',
    );
  });

  it('points SARIF results at its package database', () => {
    const layer = `sha256:${'1'.repeat(64)}`;
    const widget = { name: 'widget', version: '9', namespace: 'acme:1', versionFormat: 'numeric', purl: 'pkg:num/acme/widget@9', layer };
    const finding = { id: 'X-1', namespace: 'acme:1', severity: 'Low' as const, description: '', link: '', package: widget, fixedBy: '10' };
    const sarif = sarifReport({
      schemaVersion: '1.4',
      tool: { name: 'tarsier', version: '0.1.0' },
      createdAt: '2024-06-03T09:15:00Z',
      target: { input: 'acme:1', kind: 'registry', digest: `sha256:${'2'.repeat(64)}`, platform: 'linux/amd64', references: [] },
      layers: [layer],
      database: { mode: 'standalone', updatedAt: '2024-06-01T06:00:00Z', namespaces: [] },
      packages: [widget],
      vulnerabilities: [{ ...finding, fixState: 'fixed' as const }],
      ignored: [],
      summary: { Low: 1 },
      knownExploited: 0,
      gate: { failOn: 'High', failOnKev: false, failed: false },
    }) as { runs: Array<{ results: Array<{ locations: Array<{ physicalLocation: { artifactLocation: { uri: string } } }> }> }> };
    expect(sarif.runs[0]!.results[0]!.locations[0]!.physicalLocation.artifactLocation.uri).toBe('var/lib/numeric/db');
  });

  it('is a version format writes accept, checked with its own validity rule', async () => {
    const t = await testApp();
    expect((await postFix(t, 'numeric', '10')).statusCode).toBe(201);
    const namespaces = await t.app.inject({ url: '/v1/namespaces' });
    expect(json(namespaces).Namespaces).toEqual([{ Name: 'acme:1', VersionFormat: 'numeric' }]);

    const invalid = await postFix(t, 'numeric', '1.0');
    expect(invalid.statusCode).toBe(400);
    expect(json(invalid).Error.Message).toMatch(/is not a valid numeric version/);

    const unknown = await postFix(t, 'alpm', '1');
    expect(unknown.statusCode).toBe(400);
    expect(json(unknown).Error.Message).toBe(
      'VersionFormat "alpm" is not supported; use dpkg, rpm, apk, numeric, semver, pep440, go, maven, gem, nuget or composer',
    );
  });
});

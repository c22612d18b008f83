/**
 * `tarsier scan FILE` where FILE is an SBOM (CycloneDX or SPDX JSON, told by its content): its
 * packages matched against a server (which records it as an image) and standalone, with the
 * findings, the exit codes and every output format as for an image, the components it cannot match
 * listed in the report and on stderr, and exit 2 where a namespace of its packages has no data.
 * Real documents written by npm and hand-written ones (test/fixtures/sbom).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScanOptions } from '../../src/scanner/command.js';
import { ScanReport as ScanReportSchema } from '../../src/scanner/report-schema.js';
import type { ScanReport } from '../../src/scanner/report.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { validateCycloneDx, validateSarif } from '../helpers/report-schemas.js';
import { databaseUrl } from '../helpers/process.js';
import { scanInProcess, type ScanRun } from '../helpers/scan-run.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/sbom/${name}`, import.meta.url));
const digestOf = (file: string): string => `sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;

const NPM_CDX = fixture('npm-sbom-11.19.1.cdx.json');
const NPM_SPDX = fixture('npm-sbom-11.19.1.spdx.json');
const OS_CDX = fixture('os-packages.cdx-1.4.json');
const OS_SPDX = fixture('os-packages.spdx-2.2.json');

const DEFAULTS: ScanOptions = { format: 'json', ignoreUnfixed: false, quiet: true, insecure: false, update: false };
const NOW = new Date('2026-11-24T12:00:00Z');

/** `tarsier scan target`; the data written just now is current at NOW. */
const scan = (target: string, options: Partial<ScanOptions>): Promise<ScanRun> =>
  scanInProcess(target, { ...DEFAULTS, ...options }, {}, NOW);

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats.default(ajv);
const validateReport = ajv.compile(ScanReportSchema);

function report(run: ScanRun): ScanReport {
  const parsed = JSON.parse(run.stdout) as ScanReport;
  expect(validateReport(parsed), ajv.errorsText(validateReport.errors)).toBe(true);
  return parsed;
}

const LODASH_FINDING = {
  id: 'CVE-2099-7001',
  namespace: 'npm',
  severity: 'High',
  description: 'CVE-2099-7001 in lodash',
  link: 'https://security.example.org/CVE-2099-7001',
  package: { name: 'lodash', version: '4.17.15', namespace: 'npm', versionFormat: 'semver', purl: 'pkg:npm/lodash@4.17.15' },
  fixedBy: '4.17.21',
  fixState: 'fixed',
};

describe('tarsier scan of an SBOM', () => {
  let t: TestApp;
  let server: string;
  let dir: string;

  beforeAll(async () => {
    t = await testApp();
    const link = (name: string) => `https://security.example.org/${name}`;
    await addVulnerability(t, 'npm', {
      Name: 'CVE-2099-7001',
      Severity: 'High',
      Link: link('CVE-2099-7001'),
      FixedIn: [{ Name: 'lodash', Version: '4.17.21' }],
    });
    await addVulnerability(t, 'debian:12', {
      Name: 'CVE-2099-7002',
      Severity: 'Medium',
      Link: link('CVE-2099-7002'),
      FixedIn: [{ Name: 'openssl', Version: '3.0.13-1~deb12u1' }],
    });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    server = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    dir = await mkdtemp(join(tmpdir(), 'tarsier-sbom-scan-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('matches a CycloneDX document written by npm: packages without a layer, the findings, no layers', async () => {
    const run = await scan(NPM_CDX, { server });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    const r = report(run);
    expect(r.schemaVersion).toBe('1.4');
    expect(r.target).toEqual({
      input: NPM_CDX,
      kind: 'sbom',
      digest: digestOf(NPM_CDX),
      platform: null,
      references: ['npm-sbom-fixture@1.0.0'],
    });
    expect(r.layers).toEqual([]);
    expect(r.packages).toHaveLength(16);
    expect(r.packages.find((p) => p.name === 'lodash')).toEqual(LODASH_FINDING.package);
    expect(r.packages.every((p) => p.layer === undefined)).toBe(true);
    expect(r.vulnerabilities).toEqual([{ ...LODASH_FINDING, package: LODASH_FINDING.package }]);
    expect(r.skipped).toEqual([]);
    expect(r.database.namespaces).toEqual([{ namespace: 'npm', state: 'current', updatedAt: expect.any(String), sources: ['api'] }]);
    expect(r.summary).toEqual({ High: 1 });
    // The server recorded it as an image.
    const images = json(await t.app.inject({ url: '/tarsier/v1/images?registry=sbom' })).Images;
    expect(images.map((i: { Digest: string }) => i.Digest)).toContain(digestOf(NPM_CDX));
  });

  it('gates an SPDX document as it gates an image: exit 1 at or above --fail-on, 0 below, the findings the same', async () => {
    const failed = await scan(NPM_SPDX, { server, failOn: 'High' });
    expect(failed.code, failed.stderr).toBe(1);
    const r = report(failed);
    expect(r.target).toMatchObject({ kind: 'sbom', digest: digestOf(NPM_SPDX), references: ['npm-sbom-fixture@1.0.0'] });
    expect(r.vulnerabilities).toEqual([LODASH_FINDING]);
    expect(r.gate).toEqual({ failOn: 'High', failOnKev: false, failed: true });
    expect((await scan(NPM_SPDX, { server, failOn: 'Critical' })).code).toBe(0);
    const ignored = await scan(NPM_SPDX, { server, failOn: 'High', ignore: await ignoreFile('CVE-2099-7001') });
    expect(ignored.code, ignored.stderr).toBe(0);
  });

  async function ignoreFile(id: string): Promise<string> {
    const file = join(dir, `ignore-${id}.yaml`);
    await writeFile(file, `- id: ${id}\n  reason: not reachable\n`);
    return file;
  }

  it('writes every output format for an SBOM: table, SARIF pointing at the document, CycloneDX', async () => {
    const table = await scan(NPM_CDX, { server, format: 'table' });
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`Target:    ${NPM_CDX} (sbom)`);
    expect(table.stdout).toContain('lodash 4.17.15 (npm)\n');
    expect(table.stdout).toMatch(/CVE-2099-7001 +High +4\.17\.21/);

    const sarifFile = join(dir, 'report.sarif');
    expect((await scan(NPM_CDX, { server, format: 'sarif', output: sarifFile })).code).toBe(0);
    const sarif = JSON.parse(await readFile(sarifFile, 'utf8'));
    expect(validateSarif(sarif)).toEqual([]);
    const [result] = sarif.runs[0].results;
    expect(result.ruleId).toBe('CVE-2099-7001');
    expect(result.locations[0].physicalLocation.artifactLocation.uri).toBe(`file://${NPM_CDX}`);
    expect(result.locations[0].logicalLocations.map((l: { kind: string }) => l.kind)).toEqual(['image']);
    expect(result.locations[0].message.text).toBe(`lodash 4.17.15, listed in the SBOM ${NPM_CDX}@${digestOf(NPM_CDX)}`);

    const cdx = await scan(NPM_CDX, { server, format: 'cyclonedx' });
    expect(cdx.code).toBe(0);
    const bom = JSON.parse(cdx.stdout);
    expect(validateCycloneDx(bom)).toEqual([]);
    const lodash = bom.components.find((c: { name: string }) => c.name === 'lodash');
    expect(lodash.properties.map((p: { name: string }) => p.name)).toEqual(['tarsier:namespace', 'tarsier:version-format']);
    expect(bom.vulnerabilities.map((v: { id: string }) => v.id)).toEqual(['CVE-2099-7001']);
  });

  it('exits 2 naming the namespaces without data, and with --allow-missing-data reports the findings and what it skipped', async () => {
    const refused = await scan(OS_CDX, { server });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/cannot tell whether the image is affected: the vulnerability data it needs is missing or too old/);
    expect(refused.stderr).toMatch(/ubuntu:22\.04: no vulnerability data/);
    expect(refused.stderr).not.toMatch(/debian:12:/);

    const allowed = await scan(OS_CDX, { server, allowMissingData: true });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toMatch(/warning: the findings may be incomplete/);
    expect(allowed.stderr).toContain(
      "tarsier scan: warning: 5 of the SBOM's components were not matched:\n" +
        '  components[0] (debian): it has no package URL\n' +
        '  components[10] (bash): it has no distro qualifier, so its distribution release is unknown\n',
    );
    const r = report(allowed);
    expect(r.skipped?.map((s) => `${s.at} ${s.reason}`)).toEqual([
      'components[0] no-purl',
      'components[10] unknown-release',
      'components[11] unknown-distribution',
      'components[12] unknown-release',
      'components[13] unsupported-type',
    ]);
    expect(r.skipped?.[4]).toEqual({
      at: 'components[13]',
      name: 'openssl',
      purl: 'pkg:generic/openssl@3.0.11',
      reason: 'unsupported-type',
      why: 'no ecosystem or distribution has pkg:generic packages',
    });
    expect(r.vulnerabilities.map((f) => `${f.id} ${f.package.namespace} ${f.package.name} ${f.fixedBy}`)).toEqual([
      'CVE-2099-7002 debian:12 openssl 3.0.13-1~deb12u1',
    ]);
    const states = Object.fromEntries(r.database.namespaces.map((n) => [n.namespace, n.state]));
    expect(states).toMatchObject({ 'debian:12': 'current', 'ubuntu:22.04': 'missing', 'rhel:9': 'missing', 'wolfi:rolling': 'missing' });
    // The table says so too.
    const table = await scan(OS_CDX, { server, allowMissingData: true, format: 'table' });
    expect(table.stdout).toContain('Skipped:   5 components of the SBOM not matched');
  });

  it('exits 2 for an SPDX document whose namespaces all lack data (rhel:9, pypi), rather than call it clean', async () => {
    const run = await scan(OS_SPDX, { server });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/rhel:9: no vulnerability data/);
    expect(run.stderr).toMatch(/pypi: no vulnerability/);
  });

  it('exits 2 for a JSON file that is not an SBOM it reads, naming the field', async () => {
    const file = join(dir, 'broken.cdx.json');
    await writeFile(file, JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.6', components: [{ name: 'x', purl: 'x@1' }] }));
    const run = await scan(file, { server });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^tarsier scan: \S+broken\.cdx\.json is a JSON document but not an SBOM Tarsier reads: components\[0\]\.purl is not a package URL \("x@1": /,
    );
  });

  it('matches an SBOM standalone, in a store of its own, as against a server', async () => {
    const config = join(dir, 'standalone.yaml');
    await writeFile(config, `clair:\n  database:\n    options:\n      source: ${databaseUrl(t.pool.options)}\n`);
    const run = await scan(NPM_CDX, { config, failOn: 'High' });
    expect(run.code, run.stderr).toBe(1);
    const r = report(run);
    expect(r.database.mode).toBe('standalone');
    expect(r.target).toMatchObject({ kind: 'sbom', digest: digestOf(NPM_CDX) });
    expect(r.vulnerabilities).toEqual([LODASH_FINDING]);
    const refused = await scan(OS_CDX, { config });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/ubuntu:22\.04: no vulnerability data/);
  });
});

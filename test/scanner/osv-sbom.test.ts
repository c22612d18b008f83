/**
 * OSV data end to end: the osv source loads the fixture records (test/fixtures/feeds/osv) from a
 * local mirror, an SBOM lists every package version of their answer key (the seven versions and
 * both sides of each range boundary), and `tarsier scan` (JSON, SARIF, CycloneDX) and the images
 * API report for each exactly the records the key names; a later change to a record notifies the
 * stored SBOM it affects.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { knownNamespaceFormat } from '../../src/ecosystems/index.js';
import { osvSource } from '../../src/ecosystems/osv/updater.js';
import type { ScanOptions } from '../../src/scanner/command.js';
import { packageUrl } from '../../src/scanner/purl.js';
import type { ScanReport } from '../../src/scanner/report.js';
import { runnerSettings } from '../../src/settings.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { BOUNDARY_VERSIONS, SEVEN_VERSIONS } from '../ecosystems/osv-answer-key.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { silentLog } from '../helpers/db.js';
import { validateCycloneDx, validateSarif } from '../helpers/report-schemas.js';
import { scanInProcess } from '../helpers/scan-run.js';
import { whenDone } from '../helpers/when-done.js';

const OSV = fileURLToPath(new URL('../fixtures/feeds/osv/', import.meta.url));
const DEFAULTS: ScanOptions = { format: 'json', ignoreUnfixed: false, quiet: true, insecure: false, update: false };

/** Each package version of the answer key once, by its package URL: the records it must get. */
const EXPECTED = new Map(
  [...SEVEN_VERSIONS, ...BOUNDARY_VERSIONS].map(([namespace, name, version, records]) => [
    packageUrl({ namespace, name, version, versionFormat: knownNamespaceFormat(namespace)! }),
    [...records].sort(),
  ]),
);

/** A CycloneDX 1.6 document (written from the specification) with one component per package URL. */
function sbomOf(purls: readonly string[]): string {
  return JSON.stringify({
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    version: 1,
    metadata: { component: { type: 'application', name: 'osv-answer-key', version: '1.0.0' } },
    components: purls.map((purl) => ({
      type: 'library',
      'bom-ref': purl,
      name: purl.slice(purl.indexOf('/') + 1, purl.lastIndexOf('@')),
      purl,
    })),
  });
}

/** What a scan reported, as package URL → the sorted ids of the findings on it; every package of the SBOM present. */
function byPackage(pairs: ReadonlyArray<readonly [string, string]>): Map<string, string[]> {
  const found = new Map([...EXPECTED.keys()].map((purl) => [purl, [] as string[]]));
  for (const [purl, id] of pairs) found.get(purl)?.push(id);
  for (const ids of found.values()) ids.sort();
  return found;
}

describe('OSV records matched through SBOMs', () => {
  let t: TestApp;
  let server: string;
  let mirror: string;
  let sbomFile: string;
  let runOsv: () => ReturnType<UpdaterRunner['run']>;

  beforeAll(async () => {
    t = await testApp();
    mirror = mkdtempSync(join(tmpdir(), 'tarsier-osv-mirror-'));
    whenDone(() => rmSync(mirror, { recursive: true, force: true }));
    cpSync(OSV, mirror, { recursive: true });
    const config = parseConfig(`clair:\n  updater:\n    sources:\n      osv: { url: "${pathToFileURL(mirror).href}" }\n`);
    const runner = new UpdaterRunner({ pool: t.pool, settings: runnerSettings(config), log: silentLog });
    runOsv = () => runner.run(osvSource);
    expect(await runOsv()).toMatchObject({ status: 'updated', records: 47 });
    const documents = mkdtempSync(join(tmpdir(), 'tarsier-sbom-'));
    whenDone(() => rmSync(documents, { recursive: true, force: true }));
    sbomFile = join(documents, 'answer-key.cdx.json');
    writeFileSync(sbomFile, sbomOf([...EXPECTED.keys()]));
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    server = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });

  const scan = (options: Partial<ScanOptions>) => scanInProcess(sbomFile, { ...DEFAULTS, server, ...options }, {}, new Date());

  it('gives each package version exactly the records the answer key names, in the JSON report, SARIF and CycloneDX', async () => {
    const run = await scan({ format: 'json', failOn: 'Low' });
    // Findings at or above the gate: exit 1, never 2 (every namespace has data).
    expect(run.code, run.stderr).toBe(1);
    const report = JSON.parse(run.stdout) as ScanReport;
    expect(report.skipped ?? []).toEqual([]);
    expect(byPackage(report.vulnerabilities.map((f) => [f.package.purl, f.id] as const))).toEqual(EXPECTED);
    // FixedBy is the fix of the range the version is in.
    const fixedBy = (purl: string, id: string) => report.vulnerabilities.find((f) => f.package.purl === purl && f.id === id)?.fixedBy;
    expect(fixedBy('pkg:npm/minimist@1.2.0', 'GHSA-vh95-rmgr-6w4m')).toBe('1.2.3');
    expect(fixedBy('pkg:maven/com.fasterxml.jackson.core/jackson-databind@2.9.10.1', 'GHSA-4w82-r329-3q67')).toBe('2.9.10.3');
    expect(fixedBy('pkg:npm/lodash.pick@4.4.0', 'GHSA-p6mc-m468-83gw')).toBeNull();

    const sarif = JSON.parse((await scan({ format: 'sarif' })).stdout);
    expect(validateSarif(sarif)).toEqual([]);
    const purlOf = new Map(report.packages.map((p) => [`${p.name} ${p.version} (${p.namespace})`, p.purl]));
    const sarifPairs = (sarif.runs[0].results as Array<{ ruleId: string; message: { text: string } }>).map((r) => {
      const [, subject] = /^(.*\)) is affected by /.exec(r.message.text)!;
      return [purlOf.get(subject!)!, r.ruleId] as const;
    });
    expect(byPackage(sarifPairs)).toEqual(EXPECTED);

    const bom = JSON.parse((await scan({ format: 'cyclonedx' })).stdout);
    expect(validateCycloneDx(bom)).toEqual([]);
    const bomPairs = (bom.vulnerabilities as Array<{ id: string; affects: Array<{ ref: string }> }>).flatMap((v) =>
      v.affects.map((a) => [a.ref, v.id] as const),
    );
    expect(byPackage(bomPairs)).toEqual(EXPECTED);
  });

  it('shows the same in the images API for the SBOM the scan recorded, and notifies it when a record changes', async () => {
    const { digest } = (JSON.parse((await scan({ format: 'json' })).stdout) as ScanReport).target;
    const detail = json(await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image;
    const pairs = (
      detail.Packages as Array<{ Name: string; Version: string; NamespaceName: string; Vulnerabilities: Array<{ Name: string }> }>
    ).flatMap((p) =>
      p.Vulnerabilities.map(
        (v) =>
          [
            packageUrl({
              namespace: p.NamespaceName,
              name: p.Name,
              version: p.Version,
              versionFormat: knownNamespaceFormat(p.NamespaceName)!,
            }),
            v.Name,
          ] as const,
      ),
    );
    expect(byPackage(pairs)).toEqual(EXPECTED);

    // minimist's 1.x range of GHSA-vh95-rmgr-6w4m now ends before 1.2.0: the stored SBOM (minimist 1.2.0) is no longer affected.
    const file = join(mirror, 'npm', 'GHSA-vh95-rmgr-6w4m.json');
    const record = JSON.parse(readFileSync(file, 'utf8')) as {
      affected: Array<{ ranges: Array<{ events: Array<Record<string, string>> }> }>;
    };
    for (const affected of record.affected)
      for (const range of affected.ranges) for (const event of range.events) if (event['fixed'] === '1.2.3') event['fixed'] = '1.1.0';
    writeFileSync(file, JSON.stringify(record));
    const rerun = await runOsv();
    expect(rerun, JSON.stringify(rerun)).toMatchObject({ status: 'updated', changed: 1 });
    const { rows } = await t.pool.query<{ name: string }>(
      `SELECT x.name FROM notification x JOIN vulnerability v ON v.id = x.new_vulnerability_id WHERE v.name = 'GHSA-vh95-rmgr-6w4m'`,
    );
    expect(rows).toHaveLength(1);
    const notification = json(await t.app.inject({ url: `/tarsier/v1/notifications/${rows[0]!.name}` })).Notification;
    expect(notification.Old.Images.map((i: { Digest: string }) => i.Digest)).toContain(digest);
    expect(notification.New.Images.map((i: { Digest: string }) => i.Digest)).not.toContain(digest);
  });
});

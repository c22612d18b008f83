/**
 * `tarsier scan` standalone, as a real process: no server, its store an embedded PostgreSQL under
 * the cache directory, its data from a bundle (`tarsier export`'s format). A store without data
 * refuses to scan rather than call an image clean, and so does one holding only EPSS and KEV, or
 * data older than --max-data-age; the bundle's data time is the age reported; the store persists
 * between runs; an empty TARSIER_URL counts as unset.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScanReport } from '../../src/scanner/report.js';
import { debianLayerTar, dockerSaveArchive, layerTar } from '../helpers/image-archives.js';
import { startFeedServer } from '../helpers/feed-server.js';
import { debianLayer, ociLayout, pushImage } from '../helpers/oci-image.js';
import { runTarsier } from '../helpers/process.js';
import { missingRegistryPrograms, startRegistry } from '../helpers/registry.js';

const DAY_MS = 86_400_000;
/** When the bundle's data was last updated where it was exported: two days ago, well within --max-data-age's 120h. */
const DATA_UPDATED_AT = new Date(Date.now() - 2 * DAY_MS).toISOString();

const line = (l: object): string => `${JSON.stringify(l)}\n`;

/** A bundle as `tarsier export` writes it (version 1: one data time for all): a header, then each source's namespaces and records. */
function bundle(dataUpdatedAt = DATA_UPDATED_AT): Buffer {
  const vulnerability = (name: string, severity: string, feature: string, version: string | null) => ({
    kind: 'vulnerability',
    source: 'debian',
    vulnerability: {
      namespace: 'debian:10',
      name,
      description: `${name} in ${feature}`,
      link: `https://security-tracker.debian.org/tracker/${name}`,
      severity,
      metadata: null,
      fixedIn: [{ feature, version }],
    },
  });
  const lines = [
    { kind: 'header', format: 'tarsier-bundle', version: 1, created: new Date().toISOString(), dataUpdatedAt },
    { kind: 'source', source: 'debian', namespaces: ['debian:10'] },
    vulnerability('CVE-2099-4001', 'High', 'postgresql-11', '11.22-0+deb10u3'),
    vulnerability('CVE-2099-4002', 'Medium', 'postgresql-common', null),
    vulnerability('CVE-2099-4003', 'High', 'postgresql-11', '11.1-1'),
  ];
  return gzipSync(lines.map(line).join(''));
}

/** A bundle (version 2) holding risk context only: EPSS scores and a KEV entry, no vulnerability data. */
function riskOnlyBundle(): Buffer {
  const now = new Date().toISOString();
  const lines = [
    { kind: 'header', format: 'tarsier-bundle', version: 2, created: now, dataUpdatedAt: null },
    { kind: 'source', source: 'epss', namespaces: [], updatedAt: now },
    { kind: 'epss', source: 'epss', date: now.slice(0, 10), cve: 'CVE-2099-4001', score: 0.5, percentile: 0.9 },
    { kind: 'source', source: 'kev', namespaces: [], updatedAt: now },
    {
      kind: 'kev',
      source: 'kev',
      entry: {
        cve: 'CVE-2099-4001',
        vendorProject: 'PostgreSQL',
        product: 'PostgreSQL',
        vulnerabilityName: 'Example',
        dateAdded: '2099-01-01',
        dueDate: '2099-01-22',
        knownRansomwareCampaignUse: 'Unknown',
        requiredAction: 'Apply updates per vendor instructions.',
      },
    },
  ];
  return gzipSync(lines.map(line).join(''));
}

describe('tarsier scan standalone', () => {
  let dir: string;
  let archive: string;
  let bundleFile: string;
  let cacheDir: string;
  const env = (extra: Record<string, string> = {}) => ({ HOME: dir, TARSIER_LOG_LEVEL: 'warn', ...extra });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tarsier-standalone-'));
    // Run as root, the embedded PostgreSQL runs as another user, which must reach the cache directory.
    await chmod(dir, 0o755);
    archive = join(dir, 'image.tar');
    await dockerSaveArchive(archive, [{ layers: [debianLayerTar(10), layerTar({ 'srv/app.sh': 'true\n' })], repoTags: ['team/app:2'] }], {
      style: 'legacy',
    });
    bundleFile = join(dir, 'tarsier.bundle.gz');
    await writeFile(bundleFile, bundle());
    cacheDir = join(dir, 'cache');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('refuses to scan with a store that holds no data (exit 2), rather than report a clean image', async () => {
    const run = await runTarsier(env(), ['scan', archive, '--cache-dir', cacheDir, '--format', 'json']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /holds no vulnerability data \(EPSS, KEV and NVD scores are not\): load a bundle written by tarsier export \(--db FILE\)/,
    );
    expect(run.stdout).toBe('');
  }, 120_000);

  it('refuses to scan with a bundle of EPSS scores and KEV entries only (exit 2): risk context is not vulnerability data', async () => {
    const riskOnly = join(dir, 'risk-only.bundle.gz');
    await writeFile(riskOnly, riskOnlyBundle());
    const args = ['scan', archive, '--cache-dir', join(dir, 'risk-cache'), '--db', riskOnly, '--format', 'json', '--fail-on', 'Low'];
    const run = await runTarsier(env(), args);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/holds no vulnerability data \(EPSS, KEV and NVD scores are not\)/);
    expect(run.stdout).toBe('');
    // Opted out: the scan goes on, says that debian:10 has no data, and the report shows it.
    const allowed = await runTarsier(env(), [...args, '--allow-missing-data']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toMatch(
      /warning: the findings may be incomplete: the vulnerability data is missing or too old\n {2}debian:10: no vulnerability data/,
    );
    const report = JSON.parse(allowed.stdout) as ScanReport;
    expect(report.database).toEqual({
      mode: 'standalone',
      updatedAt: null,
      namespaces: [{ namespace: 'debian:10', state: 'missing', updatedAt: null, sources: [] }],
    });
    expect(report.vulnerabilities).toEqual([]);
  }, 180_000);

  it('refuses data older than --max-data-age (default 120h), naming the namespace; --max-data-age 0 takes any age', async () => {
    const old = new Date(Date.now() - 30 * DAY_MS).toISOString();
    const oldBundle = join(dir, 'old.bundle.gz');
    await writeFile(oldBundle, bundle(old));
    const args = ['scan', archive, '--cache-dir', join(dir, 'old-cache'), '--db', oldBundle, '--format', 'json', '--fail-on', 'High'];
    const stale = await runTarsier(env(), args);
    expect(stale.code, stale.stderr).toBe(2);
    expect(stale.stderr).toContain(
      `debian:10: its vulnerability data (from debian) was last updated ${old}, longer ago than --max-data-age 120h`,
    );
    expect(stale.stdout).toBe('');
    const longer = await runTarsier(env(), [...args, '--max-data-age', '1000h']);
    expect(longer.code, longer.stderr).toBe(1);
    const anyAge = await runTarsier(env(), [...args, '--max-data-age', '0']);
    expect(anyAge.code, anyAge.stderr).toBe(1);
    const report = JSON.parse(anyAge.stdout) as ScanReport;
    expect(report.database.namespaces).toEqual([{ namespace: 'debian:10', state: 'current', updatedAt: old, sources: ['debian'] }]);
    const bad = await runTarsier(env(), [...args, '--max-data-age', 'five days']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-data-age: invalid duration "five days"/);
  }, 180_000);

  it('scans with data from a bundle, reports its age, and keeps the store in the cache directory for the next run', async () => {
    const first = await runTarsier(env({ TARSIER_URL: '' }), [
      'scan',
      archive,
      '--cache-dir',
      cacheDir,
      '--db',
      bundleFile,
      '--format',
      'json',
      '--fail-on',
      'High',
    ]);
    expect(first.code, first.stderr).toBe(1);
    const report = JSON.parse(first.stdout) as ScanReport;
    expect(report.database).toEqual({
      mode: 'standalone',
      updatedAt: DATA_UPDATED_AT,
      namespaces: [{ namespace: 'debian:10', state: 'current', updatedAt: DATA_UPDATED_AT, sources: ['debian'] }],
    });
    expect(report.vulnerabilities.map((f) => [f.id, f.package.name, f.fixedBy])).toEqual([
      ['CVE-2099-4001', 'postgresql-11', '11.22-0+deb10u3'],
      ['CVE-2099-4002', 'postgresql-common', null],
    ]);
    expect(report.gate).toEqual({ failOn: 'High', failOnKev: false, failed: true });
    expect(first.stderr).toContain(`vulnerability data for debian:10: updated ${DATA_UPDATED_AT} (2 days ago, from debian)\n`);

    // The same cache directory, no --db: the store kept the data; --ignore-unfixed sets the unfixed one aside, and nothing is Critical.
    const second = await runTarsier(env(), [
      'scan',
      archive,
      '--cache-dir',
      cacheDir,
      '--format',
      'json',
      '--quiet',
      '--ignore-unfixed',
      '--fail-on',
      'Critical',
    ]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toBe('');
    const again = JSON.parse(second.stdout) as ScanReport;
    expect(again.vulnerabilities.map((f) => f.id)).toEqual(['CVE-2099-4001']);
    expect(again.ignored.map((f) => [f.id, f.ignored])).toEqual([['CVE-2099-4002', { because: 'unfixed' }]]);
    expect(again.database.updatedAt).toBe(DATA_UPDATED_AT);
  }, 180_000);

  it.skipIf(process.getuid?.() !== 0)(
    'as root, names the setting to change when the store user cannot reach the cache directory',
    async () => {
      const hidden = join(dir, 'private');
      await mkdir(hidden, { mode: 0o700 });
      const run = await runTarsier(env(), ['scan', archive, '--cache-dir', join(hidden, 'cache'), '--db', bundleFile]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/cannot reach the data directory .*private\/cache\/postgres: .*set --cache-dir \(or TARSIER_CACHE_DIR\)/);
    },
    120_000,
  );

  it('--update downloads the configured feeds into the store first, and the data is as old as that update', async () => {
    const feeds = await startFeedServer(); // closed after the file
    {
      // Debian's security tracker JSON, as upstream serves it: one buster entry per package.
      const tracker = {
        'postgresql-11': {
          'CVE-2099-5001': {
            description: 'a flaw in postgresql-11',
            releases: {
              buster: {
                status: 'resolved',
                repositories: { buster: '11.22-0+deb10u2' },
                fixed_version: '11.22-0+deb10u4',
                urgency: 'high',
              },
            },
          },
        },
      };
      feeds.put('/tracker/json', JSON.stringify(tracker));
      const config = join(dir, 'feeds.yaml');
      await writeFile(
        config,
        `clair:\n  updater:\n    enabledupdaters: [debian]\n    sources:\n      debian: { url: "${feeds.url('/tracker/json')}" }\n`,
      );
      const before = Date.now();
      const run = await runTarsier(env(), [
        'scan',
        archive,
        '--cache-dir',
        join(dir, 'updated-cache'),
        '--config',
        config,
        '--update',
        '--format',
        'json',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout) as ScanReport;
      expect(report.vulnerabilities.map((f) => [f.id, f.package.name, f.fixedBy, f.severity])).toEqual([
        ['CVE-2099-5001', 'postgresql-11', '11.22-0+deb10u4', 'High'],
      ]);
      expect(Date.parse(report.database.updatedAt!)).toBeGreaterThanOrEqual(before - 1000);
    }
  }, 120_000);

  it.skipIf(missingRegistryPrograms().length > 0)(
    'pulls a registry image itself, with docker login credentials',
    async () => {
      const registry = await startRegistry({ auth: 'basic' });
      try {
        const layout = await ociLayout(join(dir, 'push'), { layers: [debianLayer(10)] });
        await pushImage(registry, layout.dir, 'team/db', 'v2');
        const docker = join(dir, 'docker');
        await mkdir(docker);
        const auth = Buffer.from(`${registry.username}:${registry.password}`).toString('base64');
        await writeFile(join(docker, 'config.json'), JSON.stringify({ auths: { [`http://${registry.host}`]: { auth } } }));
        const run = await runTarsier(env({ DOCKER_CONFIG: docker }), [
          'scan',
          `${registry.host}/team/db:v2`,
          '--insecure',
          '--cache-dir',
          cacheDir,
          '--format',
          'json',
        ]);
        expect(run.code, run.stderr).toBe(0);
        const report = JSON.parse(run.stdout) as ScanReport;
        expect(report.target).toMatchObject({ kind: 'registry', references: [`${registry.host}/team/db:v2`], platform: 'linux/amd64' });
        expect(report.vulnerabilities.map((f) => f.id)).toEqual(['CVE-2099-4001', 'CVE-2099-4002']);
      } finally {
        await registry.stop();
      }
    },
    120_000,
  );
});

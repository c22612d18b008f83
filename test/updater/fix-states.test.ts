/**
 * Fix states from Red Hat's own CSAF VEX documents (test/fixtures/feeds/redhat/csaf-vex, unedited)
 * through every output: the rhel-vex updater reads them from a local feed server in Red Hat's
 * layout, then a RHEL 9 image whose rpm database holds gawk is indexed and reported by the v1 API
 * (Metadata.FixStates), the images API (FixState), the dashboard's image page and `tarsier scan`
 * (fixState, and --ignore-unfixed setting unfixed states aside while a fixed finding stays).
 *
 * The layer is the os-release of RHEL 9 over the rpm database of a real Amazon Linux 2023 image:
 * its gawk is built from the source package gawk, which Red Hat's document for CVE-2023-4156
 * names (RHEL 7–9 "Will not fix", RHEL 6 "Out of support scope").
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScan, type ScanOptions } from '../../src/scanner/command.js';
import type { ScanReport } from '../../src/scanner/report.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { elements, text } from '../helpers/html-text.js';
import { dockerSaveArchive, layerTar } from '../helpers/image-archives.js';
import { ociLayout, pushImage } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../helpers/registry.js';
import { runVexUpdater } from '../helpers/rhel-vex-feed.js';
import { indexLayer, storedVulnerability } from '../helpers/source-runs.js';
import { gzip } from '../helpers/tarball.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';

const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));

/** Red Hat's documents as the feed publishes them: <year>/cve-….json. */
const DOCUMENTS: Record<string, Buffer> = {
  '2023/cve-2023-4156.json': fixture('feeds/redhat/csaf-vex/cve-2023-4156.json'),
  '2025/cve-2025-1215.json': fixture('feeds/redhat/csaf-vex/cve-2025-1215.json'),
};

/** RHEL 9's os-release over a real rpm database (sqlite) that holds gawk. */
const RHEL9_LAYER = layerTar({
  'etc/os-release': fixture('osrelease/rhel-9/etc/os-release'),
  'var/lib/rpm/rpmdb.sqlite': fixture('rpm/amazonlinux2023-sqlite/rpmdb.sqlite'),
});

/** A fix above the installed bash, written through the API: a finding --ignore-unfixed keeps. */
const FIXED_BASH = { Name: 'CVE-2099-4156', Severity: 'Low', FixedIn: [{ Name: 'bash', Version: '0:9.9-1.el9' }] } as const;

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (images API and dashboard skipped: ${missing.join(', ')} not installed)` : '';

describe(`fix states from Red Hat's CSAF VEX documents, end to end${skipped}`, () => {
  let t: TestApp;
  let feed: FeedServer;
  let scratch: string;
  let registry: Registry | undefined;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tarsier-fix-states-'));
    registry = missing.length === 0 ? await startRegistry() : undefined;
    t = await testApp(registry ? { yaml: `  registries:\n    "${registry.host}": { insecure: true }` } : {});
    feed = await startFeedServer();
    await runVexUpdater(t.pool, feed, DOCUMENTS);
    await addVulnerability(t, 'rhel:9', { ...FIXED_BASH, Link: 'https://security.example.org/CVE-2099-4156' });
  });
  afterAll(async () => {
    await registry?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it('stores each state per namespace, package and vulnerability as Red Hat states it', async () => {
    const stored = async (namespace: string, name: string) => {
      const v = await storedVulnerability(t, namespace, name);
      return { states: v.Metadata?.FixStates, fixedIn: v.FixedIn.map((f: { Name: string; Version: string }) => [f.Name, f.Version]) };
    };
    // "Will not fix" (7–9) and "Out of support scope" (6): no fix will come.
    for (const ns of ['rhel:6', 'rhel:7', 'rhel:8', 'rhel:9']) {
      expect(await stored(ns, 'CVE-2023-4156'), ns).toEqual({ states: { gawk: 'will_not_fix' }, fixedIn: [['gawk', 'None']] });
    }
    // "Fix deferred" (9, 10) and "Out of support scope" (6–8).
    for (const ns of ['rhel:9', 'rhel:10']) {
      expect(await stored(ns, 'CVE-2025-1215'), ns).toEqual({ states: { vim: 'fix_deferred' }, fixedIn: [['vim', 'None']] });
    }
    for (const ns of ['rhel:6', 'rhel:7', 'rhel:8']) {
      expect(await stored(ns, 'CVE-2025-1215'), ns).toEqual({ states: { vim: 'will_not_fix' }, fixedIn: [['vim', 'None']] });
    }
  });

  it('v1: the installed gawk has CVE-2023-4156 with no FixedBy and Metadata.FixStates will_not_fix', async () => {
    await indexLayer(t, feed, 'rhel9-gawk', RHEL9_LAYER);
    const res = await t.app.inject({ url: '/v1/layers/rhel9-gawk?features&vulnerabilities' });
    expect(res.statusCode, res.body).toBe(200);
    const features = json(res).Layer.Features as Array<{ Name: string; NamespaceName: string; Vulnerabilities?: unknown[] }>;
    const gawk = features.find((f) => f.Name === 'gawk')!;
    expect(gawk.NamespaceName).toBe('rhel:9');
    expect(gawk.Vulnerabilities).toEqual([
      {
        Name: 'CVE-2023-4156',
        NamespaceName: 'rhel:9',
        Description:
          'A heap out-of-bounds read flaw was found in builtin.c in the gawk package. This issue may lead to a crash and could be used to read sensitive information.',
        Link: 'https://access.redhat.com/security/cve/CVE-2023-4156',
        Severity: 'Low',
        Metadata: { FixStates: { gawk: 'will_not_fix' } },
      },
    ]);
  });

  it('tarsier scan shows fixState will_not_fix; --ignore-unfixed sets it aside and keeps the fixed finding', async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const server = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    const archive = join(scratch, 'rhel9.tar');
    await dockerSaveArchive(archive, [{ layers: [RHEL9_LAYER], repoTags: ['team/rhel9:1'] }], { style: 'legacy' });
    const scan = async (options: Partial<ScanOptions>): Promise<ScanReport> => {
      const stdout = new PassThrough();
      let out = '';
      stdout.on('data', (d: Buffer) => (out += d.toString()));
      const code = await runScan(
        archive,
        { format: 'json', ignoreUnfixed: false, quiet: true, insecure: false, update: false, server, ...options },
        { env: {}, stdout, stderr: new PassThrough() as unknown as NodeJS.WriteStream, signal: new AbortController().signal },
      );
      expect(code, out).toBe(0);
      return JSON.parse(out) as ScanReport;
    };
    const findings = (r: ScanReport) => r.vulnerabilities.map((f) => [f.id, f.package.name, f.fixState, f.fixedBy]);

    expect(findings(await scan({}))).toEqual([
      ['CVE-2023-4156', 'gawk', 'will_not_fix', null],
      ['CVE-2099-4156', 'bash', 'fixed', '0:9.9-1.el9'],
    ]);
    const unfixedAside = await scan({ ignoreUnfixed: true });
    expect(findings(unfixedAside)).toEqual([['CVE-2099-4156', 'bash', 'fixed', '0:9.9-1.el9']]);
    expect(unfixedAside.ignored.map((f) => [f.id, f.fixState, f.ignored])).toEqual([
      ['CVE-2023-4156', 'will_not_fix', { because: 'unfixed' }],
    ]);
  });

  it.skipIf(missing.length > 0)('the images API shows FixState will_not_fix and the image page says "will not be fixed"', async () => {
    const layout = await ociLayout(join(scratch, 'layout'), { layers: [gzip(RHEL9_LAYER)] });
    const digest = await pushImage(registry!, layout.dir, 'team/rhel9', '1');
    const post = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/images',
      payload: { reference: `${registry!.host}/team/rhel9:1` },
    });
    expect(post.statusCode, post.body).toBe(201);

    const detail = await t.app.inject({ url: `/tarsier/v1/images/${digest}` });
    expect(detail.statusCode, detail.body).toBe(200);
    const packages = json(detail).Image.Packages as Array<{ Name: string; Vulnerabilities: Array<Record<string, unknown>> }>;
    const shown = packages.flatMap((p) => p.Vulnerabilities.map((v) => [p.Name, v.Name, v.FixState, v.FixedBy ?? null]));
    expect(shown.sort()).toEqual([
      ['bash', 'CVE-2099-4156', 'fixed', '0:9.9-1.el9'],
      ['gawk', 'CVE-2023-4156', 'will_not_fix', null],
    ]);

    const page = await t.app.inject({ url: `/ui/images/${digest}` });
    expect(page.statusCode, page.body).toBe(200);
    const rows = elements(page.body, 'tr', 'finding').map((row) => [
      row.attributes['data-vulnerability'],
      row.attributes['data-package'],
      text(elements(row.html, 'td', 'fixed-by')[0]!.html),
    ]);
    expect(rows.sort()).toEqual([
      ['CVE-2023-4156', 'gawk', 'will not be fixed'],
      ['CVE-2099-4156', 'bash', '0:9.9-1.el9'],
    ]);
  });
});

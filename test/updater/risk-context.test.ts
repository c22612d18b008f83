/**
 * Risk context end to end: FIRST's EPSS scores and CISA's KEV catalog (the fixture excerpts,
 * served by a local HTTP server as upstream serves them), NVD's scores reaching an Amazon advisory
 * through the CVEs it lists, all read by the real updaters, then shown where users look: v1
 * Metadata, the v3 ancestry's metadata, the images API (fields and filters), the CI scanner and
 * notifications of a KEV change (notifier.onenrichment).
 *
 * The Amazon Linux 2023 advisory ALAS2023-2099-001 is written here in updateinfo's format for the
 * bash of the fixture rpm database. It lists two CVEs that the fixtures know: CVE-1999-0005 (in the
 * EPSS excerpt) and CVE-2021-44228 (in the KEV excerpt). Their NVD records are written here too,
 * in NVD's JSON 2.0 format, with scores chosen so that the highest CVSS v3 and the highest v2 come
 * from different CVEs. These are not statements Amazon or NVD made.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { runScan, type ScanOptions } from '../../src/scanner/command.js';
import type { ScanReport } from '../../src/scanner/report.js';
import { exportBundle, importBundle } from '../../src/updater/bundle.js';
import { UpdaterRunner, type RunSummary } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { enabledSources } from '../../src/updater/sources.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';
import { freshPool, silentLog } from '../helpers/db.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { dockerSaveArchive, rpmLayerTar } from '../helpers/image-archives.js';
import { ociLayout, pushImage } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry } from '../helpers/registry.js';
import { gzip } from '../helpers/tarball.js';
import { whenDone } from '../helpers/when-done.js';

const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));

const SOURCES = ['amzn', 'nvd', 'epss', 'kev'] as const;
type SourceName = (typeof SOURCES)[number];

const UPDATEINFO_AL2023 = `<?xml version="1.0" encoding="UTF-8"?>
<updates>
  <update author="linux-security@amazon.com" from="linux-security@amazon.com" status="final" type="security" version="1.4">
    <id>ALAS2023-2099-001</id>
    <title>Amazon Linux 2023 - ALAS2023-2099-001: important priority package update for bash</title>
    <issued date="2099-01-05 10:00" />
    <severity>important</severity>
    <description>Example: two flaws in bash.</description>
    <references>
      <reference href="https://www.cve.org/CVERecord?id=CVE-1999-0005" id="CVE-1999-0005" title="" type="cve" />
      <reference href="https://www.cve.org/CVERecord?id=CVE-2021-44228" id="CVE-2021-44228" title="" type="cve" />
    </references>
    <pkglist>
      <collection short="amazon-linux-2023">
        <name>Amazon Linux 2023</name>
        <package arch="x86_64" epoch="0" name="bash" release="1.amzn2023.0.3" version="5.2.15">
          <filename>Packages/bash-5.2.15-1.amzn2023.0.3.x86_64.rpm</filename>
        </package>
      </collection>
    </pkglist>
  </update>
  <update author="linux-security@amazon.com" from="linux-security@amazon.com" status="final" type="security" version="1.4">
    <id>ALAS2023-2099-002</id>
    <title>Amazon Linux 2023 - ALAS2023-2099-002: medium priority package update for zlib</title>
    <issued date="2099-01-06 10:00" />
    <severity>medium</severity>
    <description>Example: a flaw in zlib no score covers.</description>
    <references>
      <reference href="https://www.cve.org/CVERecord?id=CVE-2099-0002" id="CVE-2099-0002" title="" type="cve" />
    </references>
    <pkglist>
      <collection short="amazon-linux-2023">
        <name>Amazon Linux 2023</name>
        <package arch="x86_64" epoch="0" name="zlib" release="34.amzn2023.0.1" version="1.2.11">
          <filename>Packages/zlib-1.2.11-34.amzn2023.0.1.x86_64.rpm</filename>
        </package>
      </collection>
    </pkglist>
  </update>
</updates>
`;

const V3_HIGH = 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N';
const V3_CRITICAL = 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H';
const V2_TEN = 'AV:N/AC:L/Au:N/C:C/I:C/A:C';
const V2_LOWER = 'AV:N/AC:M/Au:N/C:C/I:C/A:C';

const nvdMetric = (key: 'cvssMetricV31' | 'cvssMetricV2', version: string, score: number, vector: string) => ({
  [key]: [{ source: 'nvd@nist.gov', type: 'Primary', cvssData: { version, vectorString: vector, baseScore: score } }],
});

/** An NVD JSON 2.0 feed file with the two CVEs the advisory lists. */
const NVD_FEED = JSON.stringify({
  resultsPerPage: 2,
  startIndex: 0,
  totalResults: 2,
  format: 'NVD_CVE',
  version: '2.0',
  timestamp: '2099-01-07T00:00:00.000',
  vulnerabilities: [
    {
      cve: {
        id: 'CVE-1999-0005',
        vulnStatus: 'Analyzed',
        metrics: { ...nvdMetric('cvssMetricV31', '3.1', 7.5, V3_HIGH), ...nvdMetric('cvssMetricV2', '2.0', 10, V2_TEN) },
      },
    },
    {
      cve: {
        id: 'CVE-2021-44228',
        vulnStatus: 'Analyzed',
        metrics: { ...nvdMetric('cvssMetricV31', '3.1', 10, V3_CRITICAL), ...nvdMetric('cvssMetricV2', '2.0', 9.3, V2_LOWER) },
      },
    },
  ],
});

const KEV_EXCERPT = 'kev/known_exploited_vulnerabilities-excerpt.json';

/** The KEV excerpt with one more entry, for CVE-1999-0006 (a CVE added to the catalog). */
function kevWithAddition(): Buffer {
  const catalog = JSON.parse(fixture(`feeds/${KEV_EXCERPT}`).toString()) as { count: number; vulnerabilities: unknown[] };
  catalog.vulnerabilities.push({
    cveID: 'CVE-1999-0006',
    vendorProject: 'Example',
    product: 'Example daemon',
    vulnerabilityName: 'Example daemon buffer overflow',
    dateAdded: '2099-01-08',
    shortDescription: 'Example.',
    requiredAction: 'Apply updates per vendor instructions.',
    dueDate: '2099-01-29',
    knownRansomwareCampaignUse: 'Unknown',
    notes: '',
    cwes: [],
  });
  catalog.count++;
  return Buffer.from(JSON.stringify(catalog));
}

function serveFeeds(server: FeedServer): void {
  server.put('/amzn/2/core/latest/x86_64/mirror.list', `${server.url('/amzn/mirror2/')}\n`);
  server.put('/amzn/mirror2/repodata/repomd.xml', fixture('feeds/amazon/repomd.xml'));
  server.put('/amzn/mirror2/repodata/updateinfo.xml.gz', gzipSync('<?xml version="1.0"?>\n<updates></updates>\n'));
  server.put('/amzn/al2023/core/mirrors/latest/x86_64/mirror.list', `${server.url('/amzn/mirror2023/')}\n`);
  server.put('/amzn/mirror2023/repodata/repomd.xml', fixture('feeds/amazon/repomd.xml'));
  server.put('/amzn/mirror2023/repodata/updateinfo.xml.gz', gzipSync(UPDATEINFO_AL2023));
  server.put('/nvd/nvdcve-2.0-2021.json.gz', gzipSync(NVD_FEED));
  server.put('/epss/epss_scores-current.csv.gz', gzipSync(fixture('feeds/epss/epss-scores-excerpt.csv')));
  server.put('/kev/known_exploited_vulnerabilities.json', fixture(`feeds/${KEV_EXCERPT}`));
}

/** The four sources as the server runs them, configured by name and URL (and notifier.onenrichment). */
function runnerFor(pool: pg.Pool, server: FeedServer, onEnrichment: boolean) {
  const config = parseConfig(
    [
      'clair:',
      '  updater:',
      `    enabledupdaters: [${SOURCES.join(', ')}]`,
      '    sources:',
      `      amzn: { url: "${server.url('/amzn/')}" }`,
      `      nvd: { url: "${server.url('/nvd/')}" }`,
      `      epss: { url: "${server.url('/epss/epss_scores-current.csv.gz')}" }`,
      `      kev: { url: "${server.url('/kev/known_exploited_vulnerabilities.json')}" }`,
      '  notifier:',
      `    onenrichment: ${onEnrichment}`,
    ].join('\n'),
  );
  const sources = enabledSources(config.updater.enabledUpdaters);
  expect(sources.map((s) => s.name)).toEqual([...SOURCES]);
  const runner = new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog });
  return {
    runner,
    sources,
    run: (name: SourceName): Promise<RunSummary> => runner.run(sources.find((s) => s.name === name)!),
    runAll: async (): Promise<RunSummary[]> => {
      const summaries: RunSummary[] = [];
      for (const source of sources) summaries.push(await runner.run(source));
      return summaries;
    },
  };
}

/** An API-written vulnerability named by its CVE, in amzn:2023, fixed in a version above the installed one. */
async function addCveVulnerability(t: TestApp, name: string, feature: string, version: string): Promise<void> {
  await addVulnerability(t, 'amzn:2023', {
    Name: name,
    Severity: 'Medium',
    Link: `https://www.cve.org/CVERecord?id=${name}`,
    FixedIn: [{ Name: feature, Version: version }],
  });
}

/** Feature name → its vulnerabilities (by name) in the v1 layer report. */
async function reportedVulnerabilities(t: TestApp, layer: string): Promise<Map<string, Record<string, any>>> {
  const res = await t.app.inject({ url: `/v1/layers/${layer}?vulnerabilities` });
  expect(res.statusCode, res.body).toBe(200);
  const found = new Map<string, Record<string, any>>();
  for (const f of json(res).Layer.Features as Array<{ Name: string; Vulnerabilities?: Array<Record<string, any>> }>) {
    for (const v of f.Vulnerabilities ?? []) found.set(`${f.Name} ${v.Name}`, v);
  }
  return found;
}

/**
 * Waits until the layer's v1 report shows what expected says of it. The updaters here write behind
 * the app's back, as a `tarsier update` process or another replica does: the app's report cache
 * drops what they change once the database's notification of the commit reaches it, a moment later.
 */
async function reportShows(t: TestApp, layer: string, expected: (found: Map<string, Record<string, any>>) => unknown, value: unknown) {
  await expect.poll(async () => expected(await reportedVulnerabilities(t, layer)), { timeout: 10_000, interval: 50 }).toEqual(value);
}

const ADVISORY_NVD = {
  CVSSv3: { Score: 10, Vectors: V3_CRITICAL, CVE: 'CVE-2021-44228' },
  CVSSv2: { Score: 10, Vectors: V2_TEN, CVE: 'CVE-1999-0005' },
};
const ADVISORY_EPSS = { Score: 0.91963, Percentile: 0.9903, Date: '2024-10-25', CVE: 'CVE-1999-0005' };
const ADVISORY_KEV = { DateAdded: '2021-12-10', DueDate: '2021-12-24', KnownRansomwareCampaignUse: 'Known', CVE: 'CVE-2021-44228' };

describe('EPSS, KEV and NVD scores for advisories', () => {
  let t: TestApp;
  let feeds: FeedServer;
  let updaters: ReturnType<typeof runnerFor>;
  const layer = gzip(rpmLayerTar('amazonlinux2023'));
  const notifications = async (): Promise<number> => (await t.pool.query('SELECT count(*)::int AS n FROM notification')).rows[0].n;

  beforeAll(async () => {
    t = await testApp();
    feeds = await startFeedServer();
    serveFeeds(feeds);
    updaters = runnerFor(t.pool, feeds, true);
    // The distribution's advisories first, NVD's scores then land on them (the catalog's order).
    expect((await updaters.runAll()).map((s) => [s.source, s.status, s.records])).toEqual([
      ['amzn', 'updated', 2],
      ['nvd', 'updated', 2],
      ['epss', 'updated', 29],
      ['kev', 'updated', 2],
    ]);
    await addCveVulnerability(t, 'CVE-2017-3066', 'ncurses-base', '6.2-5.amzn2023.0.1');
    await addCveVulnerability(t, 'CVE-1999-0006', 'ncurses-libs', '6.2-5.amzn2023.0.1');
    feeds.put('/layers/al2023.tar.gz', layer);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/layers',
      payload: { Layer: { Name: 'al2023', Path: feeds.url('/layers/al2023.tar.gz'), Format: 'Docker' } },
    });
    expect(res.statusCode, res.body).toBe(201);
  });

  it('shows EPSS, KEV and the highest NVD score of its CVEs on an advisory in v1 Metadata, each with the CVE it came from', async () => {
    const found = await reportedVulnerabilities(t, 'al2023');
    expect(found.get('bash ALAS2023-2099-001')).toEqual({
      Name: 'ALAS2023-2099-001',
      NamespaceName: 'amzn:2023',
      Description: 'Example: two flaws in bash.',
      Link: 'https://alas.aws.amazon.com/AL2023/ALAS-2099-001.html',
      // Amazon's own severity stays: NVD's applies only where a source gives none.
      Severity: 'High',
      FixedBy: '5.2.15-1.amzn2023.0.3',
      Metadata: {
        ALAS: { CVEs: ['CVE-1999-0005', 'CVE-2021-44228'] },
        NVD: ADVISORY_NVD,
        EPSS: ADVISORY_EPSS,
        KEV: ADVISORY_KEV,
      },
    });
    // An advisory none of whose CVEs is scored or listed gets none of the keys.
    expect(found.get('zlib ALAS2023-2099-002')!.Metadata).toEqual({ ALAS: { CVEs: ['CVE-2099-0002'] } });
    // A vulnerability named by its CVE: the keys without CVE.
    expect(found.get('ncurses-base CVE-2017-3066')!.Metadata).toEqual({
      KEV: { DateAdded: '2025-02-24', DueDate: '2025-03-17', KnownRansomwareCampaignUse: 'Unknown' },
    });
    expect(found.get('ncurses-libs CVE-1999-0006')!.Metadata).toEqual({
      EPSS: { Score: 0.03341, Percentile: 0.91563, Date: '2024-10-25' },
    });

    const single = await t.app.inject({ url: '/v1/namespaces/amzn%3A2023/vulnerabilities/ALAS2023-2099-001' });
    expect(single.statusCode, single.body).toBe(200);
    expect(json(single).Vulnerability.Metadata).toEqual(found.get('bash ALAS2023-2099-001')!.Metadata);
  });

  it('gives the same keys in the v3 ancestry metadata', async () => {
    const post = await t.app.inject({
      method: 'POST',
      url: '/ancestry',
      payload: {
        ancestry_name: 'al2023-image',
        format: 'Docker',
        layers: [{ hash: `sha256:${createHash('sha256').update(layer).digest('hex')}`, path: feeds.url('/layers/al2023.tar.gz') }],
      },
    });
    expect(post.statusCode, post.body).toBe(200);
    const res = await t.app.inject({ url: '/ancestry/al2023-image?with_features=true&with_vulnerabilities=true' });
    expect(res.statusCode, res.body).toBe(200);
    const features = (
      json(res).ancestry.layers as Array<{ detected_features?: Array<{ name: string; vulnerabilities?: unknown[] }> }>
    ).flatMap((l) => l.detected_features ?? []);
    const bash = features.find((f) => f.name === 'bash') as { vulnerabilities: Array<{ name: string; metadata: string }> };
    const advisory = bash.vulnerabilities.find((v) => v.name === 'ALAS2023-2099-001')!;
    expect(JSON.parse(advisory.metadata)).toEqual({
      ALAS: { CVEs: ['CVE-1999-0005', 'CVE-2021-44228'] },
      NVD: ADVISORY_NVD,
      EPSS: ADVISORY_EPSS,
      KEV: ADVISORY_KEV,
    });
  });

  it('downloads nothing and writes nothing when every feed answers 304', async () => {
    const versions = async () =>
      (
        await t.pool.query<{ rows: string }>(
          `SELECT (SELECT string_agg(id || ':' || xmin::text, ',' ORDER BY id) FROM vulnerability) || '|' ||
                  (SELECT string_agg(cve || ':' || xmin::text, ',' ORDER BY cve) FROM epss) || '|' ||
                  (SELECT string_agg(cve || ':' || xmin::text, ',' ORDER BY cve) FROM kev) || '|' ||
                  (SELECT string_agg(cve || ':' || xmin::text, ',' ORDER BY cve) FROM nvd_enrichment) || '|' ||
                  (SELECT count(*) FROM notification) AS rows`,
        )
      ).rows[0]!.rows;
    const before = await versions();
    const requestsBefore = feeds.requests.length;
    expect((await updaters.runAll()).map((s) => [s.source, s.status, s.changed])).toEqual([
      ['amzn', 'unchanged', 0],
      ['nvd', 'unchanged', 0],
      ['epss', 'unchanged', 0],
      ['kev', 'unchanged', 0],
    ]);
    const files = feeds.requests.slice(requestsBefore).filter((r) => !r.path.endsWith('mirror.list') && !r.path.endsWith('repomd.xml'));
    expect(files.length).toBeGreaterThan(0);
    // 304 for every file it fetched before (NVD's other years are absent upstream: 404).
    expect(files.filter((r) => r.status !== 404).map((r) => [r.path, r.status])).toEqual(
      files.filter((r) => r.status !== 404).map((r) => [r.path, 304]),
    );
    // Not a row rewritten: each row's transaction id is the same.
    expect(await versions()).toBe(before);
  });

  it('keeps NVD scores on advisories the source rewrites: an unchanged advisory gets no new version', async () => {
    const live = async () =>
      (await t.pool.query("SELECT id, metadata->'NVD' AS nvd FROM vulnerability WHERE name = 'ALAS2023-2099-001' AND deleted_at IS NULL"))
        .rows;
    const before = await live();
    feeds.put('/amzn/mirror2023/repodata/updateinfo.xml.gz', gzipSync(UPDATEINFO_AL2023.replace('no score covers', 'no score covers yet')));
    expect(await updaters.run('amzn')).toMatchObject({ status: 'updated', changed: 1 });
    expect(await live()).toEqual(before);
    expect(before[0].nvd).toEqual(ADVISORY_NVD);
  });

  it('replaces the scores with a new EPSS file, and cached reports show the new ones at once', async () => {
    const notified = await notifications();
    expect((await reportedVulnerabilities(t, 'al2023')).get('bash ALAS2023-2099-001')!.Metadata.EPSS).toEqual(ADVISORY_EPSS);
    feeds.put('/epss/epss_scores-current.csv.gz', gzipSync(fixture('feeds/epss/epss-scores-excerpt-2.csv')));
    expect(await updaters.run('epss')).toMatchObject({ status: 'updated', records: 5 });
    // The new score, and CVE-1999-0006, not in the new file, without its score.
    await reportShows(
      t,
      'al2023',
      (found) => [found.get('bash ALAS2023-2099-001')!.Metadata.EPSS, found.get('ncurses-libs CVE-1999-0006')!.Metadata],
      [{ Score: 0.91963, Percentile: 0.99214, Date: '2025-02-20', CVE: 'CVE-1999-0005' }, undefined],
    );
    // A vulnerability's EPSS moving is no change of the vulnerability: no version, no notification.
    expect(await notifications()).toBe(notified);
    feeds.put('/epss/epss_scores-current.csv.gz', gzipSync(fixture('feeds/epss/epss-scores-excerpt.csv')));
    expect(await updaters.run('epss')).toMatchObject({ status: 'updated', records: 29 });
  });

  it('notifies the vulnerabilities a CVE added to KEV concerns, with the KEV entry on the new side only', async () => {
    feeds.put('/kev/known_exploited_vulnerabilities.json', kevWithAddition());
    expect(await updaters.run('kev')).toMatchObject({ status: 'updated', records: 3, changed: 1 });
    const { rows } = await t.pool.query<{ name: string; vulnerability: string }>(
      `SELECT n.name, v.name AS vulnerability FROM notification n JOIN vulnerability v ON v.id = n.new_vulnerability_id
       WHERE n.risk_change IS NOT NULL`,
    );
    expect(rows.map((r) => r.vulnerability)).toEqual(['CVE-1999-0006']);
    const kev = { DateAdded: '2099-01-08', DueDate: '2099-01-29', KnownRansomwareCampaignUse: 'Unknown' };
    const epss = { Score: 0.03341, Percentile: 0.91563, Date: '2024-10-25' };

    const v1 = json(await t.app.inject({ url: `/v1/notifications/${rows[0]!.name}` })).Notification;
    expect(v1.Old.Vulnerability.Metadata).toEqual({ EPSS: epss });
    expect(v1.New.Vulnerability.Metadata).toEqual({ EPSS: epss, KEV: kev });
    expect(v1.Old.LayersIntroducingVulnerability).toEqual(['al2023']);
    expect(v1.New.LayersIntroducingVulnerability).toEqual(['al2023']);

    const v3 = json(await t.app.inject({ url: `/notifications/${rows[0]!.name}?limit=10` })).notification;
    expect(JSON.parse(v3.old.vulnerability.metadata)).toEqual({ EPSS: epss });
    expect(JSON.parse(v3.new.vulnerability.metadata)).toEqual({ EPSS: epss, KEV: kev });

    const images = json(await t.app.inject({ url: `/tarsier/v1/notifications/${rows[0]!.name}` })).Notification;
    expect(images.Old.Vulnerability).toMatchObject({ Name: 'CVE-1999-0006', EPSS: epss });
    expect(images.Old.Vulnerability.KEV).toBeUndefined();
    expect(images.New.Vulnerability).toMatchObject({ Name: 'CVE-1999-0006', EPSS: epss, KEV: kev });

    // The report shows the entry now.
    await reportShows(t, 'al2023', (found) => found.get('ncurses-libs CVE-1999-0006')!.Metadata, { EPSS: epss, KEV: kev });
  });

  it('notifies nothing of a KEV change when notifier.onenrichment is off (the default)', async () => {
    expect(parseConfig('').notifier.onEnrichment).toBe(false);
    const quiet = runnerFor(t.pool, feeds, false);
    const before = await notifications();
    feeds.put('/kev/known_exploited_vulnerabilities.json', fixture(`feeds/${KEV_EXCERPT}`));
    expect(await quiet.run('kev')).toMatchObject({ status: 'updated', records: 2, changed: 1 });
    expect(await notifications()).toBe(before);
    await reportShows(t, 'al2023', (found) => found.get('ncurses-libs CVE-1999-0006')!.Metadata.KEV, undefined);
  });

  it('carries EPSS, KEV, NVD and the advisories’ CVE lists through export and import', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-risk-bundle-'));
    whenDone(() => rm(dir, { recursive: true, force: true }));
    const bundle = join(dir, 'bundle.jsonl.gz');
    await exportBundle(t.pool, updaters.sources, bundle);
    const target = await freshPool();
    const runner = new UpdaterRunner({ pool: target, settings: runnerSettings(parseConfig('')), log: silentLog });
    const summaries = await importBundle(runner, updaters.sources, bundle);
    expect(summaries.map((s) => [s.source, s.records])).toEqual([
      ['amzn', 2],
      ['nvd', 2],
      ['epss', 29],
      ['kev', 2],
      // The two vulnerabilities written through the API travel too, as the API's.
      ['api', 2],
    ]);
    const snapshot = async (pool: pg.Pool) =>
      (
        await pool.query(
          `SELECT (SELECT json_agg(json_build_object('name', name, 'updater', updater, 'cves', cves, 'metadata', metadata, 'severity', severity)
                              ORDER BY name)
                     FROM vulnerability WHERE deleted_at IS NULL) AS vulnerabilities,
                  (SELECT json_agg(e ORDER BY cve) FROM epss e) AS epss,
                  (SELECT json_agg(k ORDER BY cve) FROM kev k) AS kev`,
        )
      ).rows[0];
    expect(await snapshot(target)).toEqual(await snapshot(t.pool));
  });

  it('gives EPSS and KEV on each finding of the CI scanner, and --fail-on-kev fails on a known exploited one', async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const server = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-risk-scan-'));
    whenDone(() => rm(dir, { recursive: true, force: true }));
    const archive = join(dir, 'al2023.tar');
    await dockerSaveArchive(archive, [{ layers: [rpmLayerTar('amazonlinux2023')], repoTags: ['team/al2023:1'] }], { style: 'legacy' });
    const scan = async (options: Partial<ScanOptions>) => {
      let out = '';
      const stdout = new PassThrough().on('data', (d: Buffer) => (out += d.toString()));
      const stderr = new PassThrough();
      const code = await runScan(
        archive,
        { format: 'json', ignoreUnfixed: false, quiet: true, insecure: false, update: false, server, ...options },
        { env: {}, stdout, stderr: stderr as unknown as NodeJS.WriteStream, signal: new AbortController().signal, now: () => new Date() },
      );
      return { code, report: out === '' ? undefined : (JSON.parse(out) as ScanReport) };
    };

    const { code, report } = await scan({});
    expect(code).toBe(0);
    const advisory = report!.vulnerabilities.find((f) => f.id === 'ALAS2023-2099-001')!;
    expect(advisory.epss).toEqual({ score: 0.91963, percentile: 0.9903, date: '2024-10-25', cve: 'CVE-1999-0005' });
    expect(advisory.kev).toEqual({
      dateAdded: '2021-12-10',
      dueDate: '2021-12-24',
      knownRansomwareCampaignUse: 'Known',
      cve: 'CVE-2021-44228',
    });
    // The CVSS shown is NVD's highest v3 among the advisory's CVEs.
    expect(advisory.cvss).toMatchObject({ version: '3', score: 10, source: 'NVD' });
    expect(report!.vulnerabilities.find((f) => f.id === 'CVE-2017-3066')!.kev).toMatchObject({ cve: 'CVE-2017-3066' });
    expect(report!.vulnerabilities.find((f) => f.id === 'ALAS2023-2099-002')).not.toHaveProperty('kev');

    expect((await scan({ failOnKev: true })).code).toBe(1);
    // Ignoring the two known exploited findings passes the gate.
    const ignore = join(dir, 'ignore.yaml');
    await writeFile(ignore, '- id: ALAS2023-2099-001\n- id: CVE-2017-3066\n');
    expect((await scan({ failOnKev: true, ignore })).code).toBe(0);
  });

  it('keeps an advisory’s CVEs, and so its KEV entry, through a fix edited by hand', async () => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/amzn%3A2023/vulnerabilities/ALAS2023-2099-001/fixes/bash',
      payload: { Feature: { Name: 'bash', NamespaceName: 'amzn:2023', Version: '5.2.15-1.amzn2023.0.4' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { rows } = await t.pool.query("SELECT cves FROM vulnerability WHERE name = 'ALAS2023-2099-001' AND deleted_at IS NULL");
    expect(rows).toEqual([{ cves: ['CVE-1999-0005', 'CVE-2021-44228'] }]);
    expect((await reportedVulnerabilities(t, 'al2023')).get('bash ALAS2023-2099-001')!.Metadata).toMatchObject({ KEV: ADVISORY_KEV });
  });

  const missing = missingRegistryPrograms();
  it.skipIf(missing.length > 0)(
    `shows EPSS and KEV in the images API and filters images by them${missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : ''}`,
    async () => {
      const registry = await startRegistry();
      whenDone(() => registry.stop());
      const app = await testApp({ pool: t.pool, yaml: `  registries:\n    "${registry.host}": { insecure: true }` });
      const scratch = await mkdtemp(join(tmpdir(), 'tarsier-risk-images-'));
      whenDone(() => rm(scratch, { recursive: true, force: true }));
      const layout = await ociLayout(join(scratch, 'al2023'), { layers: [gzip(rpmLayerTar('amazonlinux2023'))] });
      const digest = await pushImage(registry, layout.dir, 'team/al2023', '1');
      const scan = await app.app.inject({
        method: 'POST',
        url: '/tarsier/v1/images',
        payload: { reference: `${registry.host}/team/al2023:1` },
      });
      expect(scan.statusCode, scan.body).toBe(201);

      const detail = json(await app.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image;
      expect(detail.KnownExploited).toBe(2);
      const bash = detail.Packages.find((p: { Name: string }) => p.Name === 'bash');
      expect(bash.Vulnerabilities).toEqual([
        expect.objectContaining({ Name: 'ALAS2023-2099-001', Severity: 'High', EPSS: ADVISORY_EPSS, KEV: ADVISORY_KEV }),
      ]);

      const list = async (query: string) =>
        (
          json(await app.app.inject({ url: `/tarsier/v1/images?repository=team/al2023&${query}` })).Images as Array<Record<string, unknown>>
        ).map((i) => [i.Digest, i.KnownExploited]);
      expect(await list('kev=true')).toEqual([[digest, 2]]);
      expect(await list('min_epss=0.9')).toEqual([[digest, 2]]);
      expect(await list('min_epss=0.95')).toEqual([]);
      expect(await list('min_epss=0.9&kev=true&min_severity=Critical')).toEqual([]);
      const bad = await app.app.inject({ url: '/tarsier/v1/images?min_epss=1.5' });
      expect(bad.statusCode).toBe(400);
    },
  );
});

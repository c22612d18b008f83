/**
 * The dashboard's changes page (/ui/changes) against a real registry and the real KEV updater:
 * images scanned from a registry, then vulnerabilities added, changed (severity, a fix) and
 * withdrawn through the v1 API and a CVE added to CISA's KEV catalog (notifier.onenrichment). The
 * page is read through the data-testid attributes it documents: its notifications newest first,
 * each as a sentence, the image counts of each side equal to what GET
 * /tarsier/v1/notifications/{name} lists, the first images linked as the API lists them, paging,
 * the exposure chart's table (today's numbers against the images API, past days against the
 * versions' lifetimes), and escaping.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANGES_PAGE, EXPOSURE_DAYS, FIRST_IMAGES } from '../../../src/api/ui/pages/changes.js';
import { parseConfig } from '../../../src/config.js';
import { UpdaterRunner } from '../../../src/updater/runner.js';
import { runnerSettings } from '../../../src/settings.js';
import { enabledSources } from '../../../src/updater/sources.js';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { elements, text } from '../../helpers/html-text.js';
import { addVulnerability, seedDescription, seedLink, type VulnerabilitySeed } from '../../helpers/vulnerabilities.js';
import { silentLog } from '../../helpers/db.js';
import { startFeedServer, type FeedServer } from '../../helpers/feed-server.js';
import { debianLayer, layer, ociLayout, pushImage } from '../../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../../helpers/registry.js';

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : '';

const NAMESPACE = 'debian:9';
const NS = encodeURIComponent(NAMESPACE);

/** bash 4.4-5 is installed: affects every image. */
const BASH: VulnerabilitySeed = { Name: 'CVE-2099-3001', Severity: 'High', FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }] };
/** zlib, no fix yet: affects every image; added after the scan, then to KEV. */
const ZLIB: VulnerabilitySeed = { Name: 'CVE-2099-3002', Severity: 'Medium', FixedIn: [{ Name: 'zlib', Version: 'None' }] };
/** jq, which only the second image installs; withdrawn after the scan. */
const JQ: VulnerabilitySeed = { Name: 'CVE-2099-3003', Severity: 'Low', FixedIn: [{ Name: 'jq', Version: '1.5+dfsg-2' }] };
/** Text a browser must show as text. */
const HOSTILE: VulnerabilitySeed = {
  Name: 'CVE-2099-3666 <script>alert("x")</script>',
  Severity: 'High',
  FixedIn: [{ Name: '<b>not-installed</b>', Version: '1.0' }],
};

interface Change {
  name: string;
  kind: string;
  html: string;
  sentence: string;
  /** side → the number of images shown. */
  counts: Record<string, number>;
  /** The hrefs of the linked images, in order. */
  images: string[];
  more: { href: string; text: string } | undefined;
  diff: string[][];
}

/** The page's changes, in order. */
function changes(page: string): Change[] {
  return elements(page, 'li', 'change').map(({ attributes, html }) => {
    const sentence = elements(html, 'p', 'change-sentence');
    expect(sentence).toHaveLength(1);
    const affected = elements(html, 'p', 'affected-images')[0];
    const more = affected && elements(affected.html, 'a', 'more-images')[0];
    const diff = elements(html, 'table', 'change-diff')[0]!;
    return {
      name: attributes['data-notification']!,
      kind: attributes['data-kind']!,
      html,
      sentence: text(sentence[0]!.html),
      counts: Object.fromEntries(
        elements(html, 'span', 'affected-count').map((e) => [e.attributes['data-side']!, Number(text(e.html).replace(/,/g, ''))]),
      ),
      images: affected ? [...affected.html.matchAll(/<a href="(\/ui\/images\/[^"]+)"/g)].map((m) => m[1]!) : [],
      more: more && { href: more.attributes.href!, text: text(more.html) },
      diff: [...diff.html.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((row) =>
        [...row[1]!.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((cell) => text(cell[1]!)),
      ),
    };
  });
}

/** The exposure table: day → severity → number. */
function exposureTable(page: string): Map<string, Record<string, number>> {
  const table = elements(page, 'table', 'exposure-table');
  expect(table).toHaveLength(1);
  const rows = new Map<string, Record<string, number>>();
  for (const row of table[0]!.html.matchAll(/<tr data-day="([^"]+)">([\s\S]*?)<\/tr>/g)) {
    rows.set(
      row[1]!,
      Object.fromEntries(
        [...row[2]!.matchAll(/<td[^>]*data-severity="(\w+)"[^>]*>([\s\S]*?)<\/td>/g)].map((c) => [
          c[1]!,
          Number(text(c[2]!).replace(/,/g, '')),
        ]),
      ),
    );
  }
  return rows;
}

async function page(t: TestApp, url = '/ui/changes'): Promise<string> {
  const res = await t.app.inject({ url });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  return res.body;
}

/** The notifications as stored, newest first. */
async function notificationNames(t: TestApp): Promise<string[]> {
  return (await t.pool.query<{ name: string }>('SELECT name FROM notification ORDER BY id DESC')).rows.map((r) => r.name);
}

/** The images GET /tarsier/v1/notifications/{name} lists on each side (one page holds them all here). */
async function apiSides(t: TestApp, name: string): Promise<{ old?: any[]; new?: any[]; notification: any }> {
  const res = await t.app.inject({ url: `/tarsier/v1/notifications/${name}?limit=100` });
  expect(res.statusCode, res.body).toBe(200);
  const n = json(res).Notification;
  expect(n.NextPage).toBeUndefined();
  return { notification: n, ...(n.Old ? { old: n.Old.Images } : {}), ...(n.New ? { new: n.New.Images } : {}) };
}

const KEV_PATH = '/kev/known_exploited_vulnerabilities.json';
const kevExcerpt = (): Buffer =>
  readFileSync(new URL('../../fixtures/feeds/kev/known_exploited_vulnerabilities-excerpt.json', import.meta.url));

/** The KEV excerpt with an entry for cve (a CVE CISA adds to the catalog). */
function kevWith(cve: string): Buffer {
  const catalog = JSON.parse(kevExcerpt().toString()) as { count: number; vulnerabilities: unknown[] };
  catalog.vulnerabilities.push({
    cveID: cve,
    vendorProject: 'Example',
    product: 'zlib',
    vulnerabilityName: 'Example zlib <overflow>',
    dateAdded: '2099-01-08',
    shortDescription: 'Example.',
    requiredAction: 'Apply updates per vendor instructions.',
    dueDate: '2099-01-29',
    knownRansomwareCampaignUse: 'Known',
    notes: '',
    cwes: [],
  });
  catalog.count++;
  return Buffer.from(JSON.stringify(catalog));
}

describe.skipIf(missing.length > 0)(`the changes page${skipped}`, () => {
  let registry: Registry;
  let feeds: FeedServer;
  let t: TestApp;
  let scratch: string;
  let runKev: () => Promise<unknown>;
  /** Digests: A (debian 9) in three repositories, B (with jq) in one. */
  const digests = { a: '', b: '' };
  /** The scenario's notifications by what they say. */
  const names: Record<'bashNew' | 'jqNew' | 'zlibNew' | 'severity' | 'fix' | 'withdrawn' | 'kev' | 'hostile', string> = {
    bashNew: '',
    jqNew: '',
    zlibNew: '',
    severity: '',
    fix: '',
    withdrawn: '',
    kev: '',
    hostile: '',
  };
  const newest = async (): Promise<string> => (await notificationNames(t))[0]!;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tarsier-changes-'));
    registry = await startRegistry();
    feeds = await startFeedServer();
    feeds.put(KEV_PATH, kevExcerpt());
    t = await testApp({ yaml: `  registries:\n    "${registry.host}": { insecure: true }` });
    const config = parseConfig(
      [
        'clair:',
        '  updater:',
        '    enabledupdaters: [kev]',
        '    sources:',
        `      kev: { url: "${feeds.url(KEV_PATH)}" }`,
        '  notifier:',
        '    onenrichment: true',
      ].join('\n'),
    );
    const kev = enabledSources(config.updater.enabledUpdaters).find((s) => s.name === 'kev')!;
    const runner = new UpdaterRunner({ pool: t.pool, settings: runnerSettings(config), log: silentLog });
    runKev = () => runner.run(kev);
    // The catalog's first run notifies nothing (none of its CVEs is known here anyway).
    expect(await runKev()).toMatchObject({ status: 'updated' });

    // Known before the images are scanned.
    await addVulnerability(t, NAMESPACE, BASH);
    names.bashNew = await newest();
    await addVulnerability(t, NAMESPACE, JQ);
    names.jqNew = await newest();

    const debian = await ociLayout(join(scratch, 'a'), { layers: [debianLayer(9)] });
    const withJq = await ociLayout(join(scratch, 'b'), {
      layers: [
        debianLayer(9),
        layer({
          'var/lib/dpkg/status':
            readFileSync(new URL('../../fixtures/dpkg/debian-9-stretch.status', import.meta.url), 'utf8').trimEnd() +
            '\n\nPackage: jq\nStatus: install ok installed\nVersion: 1.5+dfsg-1.3\nArchitecture: amd64\n',
        }),
      ],
    });
    for (const [dir, repository, tag] of [
      [debian.dir, 'team/app', 'v1'],
      [withJq.dir, 'team/app', 'v2'],
      [debian.dir, 'team/mirror', 'v1'],
      [debian.dir, 'ops/base', 'stable'],
    ] as const) {
      const digest = await pushImage(registry, dir, repository, tag);
      if (dir === debian.dir) digests.a = digest;
      else digests.b = digest;
      const res = await t.app.inject({
        method: 'POST',
        url: '/tarsier/v1/images',
        payload: { reference: `${registry.host}/${repository}:${tag}` },
      });
      expect(res.statusCode, res.body).toBe(201);
    }

    // Changes after the scan, through the v1 API.
    await addVulnerability(t, NAMESPACE, ZLIB);
    names.zlibNew = await newest();
    const put = await t.app.inject({
      method: 'PUT',
      url: `/v1/namespaces/${NS}/vulnerabilities/${BASH.Name}`,
      payload: {
        Vulnerability: {
          Name: BASH.Name,
          NamespaceName: NAMESPACE,
          Severity: 'Critical',
          Link: seedLink(BASH),
          Description: seedDescription(BASH),
        },
      },
    });
    expect(put.statusCode, put.body).toBe(200);
    names.severity = await newest();
    const fix = await t.app.inject({
      method: 'PUT',
      url: `/v1/namespaces/${NS}/vulnerabilities/${BASH.Name}/fixes/bash`,
      payload: { Feature: { Name: 'bash', NamespaceName: NAMESPACE, Version: '4.4-5+deb9u2' } },
    });
    expect(fix.statusCode, fix.body).toBe(200);
    names.fix = await newest();
    const withdrawn = await t.app.inject({ method: 'DELETE', url: `/v1/namespaces/${NS}/vulnerabilities/${JQ.Name}` });
    expect(withdrawn.statusCode, withdrawn.body).toBe(200);
    names.withdrawn = await newest();

    // CISA adds the zlib CVE to KEV: the real updater notifies it (notifier.onenrichment).
    feeds.put(KEV_PATH, kevWith(ZLIB.Name));
    expect(await runKev()).toMatchObject({ status: 'updated', changed: 1 });
    names.kev = await newest();

    await addVulnerability(t, NAMESPACE, HOSTILE);
    names.hostile = await newest();
    expect(new Set(Object.values(names)).size).toBe(8);
  });
  afterAll(async () => {
    await registry?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('lists the notifications newest first, each as a sentence', async () => {
    const shown = changes(await page(t));
    expect(shown.map((c) => c.name)).toEqual(await notificationNames(t));
    expect(shown.map((c) => c.name)).toEqual([
      names.hostile,
      names.kev,
      names.withdrawn,
      names.fix,
      names.severity,
      names.zlibNew,
      names.jqNew,
      names.bashNew,
    ]);
    const by = new Map(shown.map((c) => [c.name, c]));
    const at = (name: string) => by.get(name)!;

    expect(at(names.zlibNew)).toMatchObject({ kind: 'new', sentence: 'CVE-2099-3002 now affects 4 images.' });
    expect(at(names.bashNew)).toMatchObject({ kind: 'new', sentence: 'CVE-2099-3001 now affects 4 images.' });
    expect(at(names.jqNew)).toMatchObject({ kind: 'new', sentence: 'CVE-2099-3003 now affects 1 image.' });
    expect(at(names.severity)).toMatchObject({
      kind: 'changed',
      sentence: 'CVE-2099-3001 changed: High → Critical. It affects 4 images (before: 4 images).',
    });
    expect(at(names.severity).diff).toEqual([
      ['', 'Before', 'After'],
      ['Severity', 'High', 'Critical'],
      ['bash', 'fixed in 4.4-5+deb9u1', 'fixed in 4.4-5+deb9u1'],
      ['Known exploited', 'not listed', 'not listed'],
    ]);
    expect(at(names.fix)).toMatchObject({
      kind: 'changed',
      sentence: 'CVE-2099-3001 changed: bash fixed in 4.4-5+deb9u2. It affects 4 images (before: 4 images).',
    });
    expect(at(names.fix).diff[2]).toEqual(['bash', 'fixed in 4.4-5+deb9u1', 'fixed in 4.4-5+deb9u2']);
    expect(at(names.withdrawn)).toMatchObject({ kind: 'withdrawn', sentence: 'CVE-2099-3003 no longer affects 1 image (withdrawn).' });
    expect(at(names.withdrawn).diff).toEqual([
      ['', 'Before'],
      ['Severity', 'Low'],
      ['jq', 'fixed in 1.5+dfsg-2'],
      ['Known exploited', 'not listed'],
    ]);
    expect(at(names.kev)).toMatchObject({
      kind: 'kev',
      sentence:
        'CVE-2099-3002 is now known exploited (CISA KEV, added 2099-01-08, due 2099-01-29; used in ransomware campaigns). It affects 4 images.',
    });
    expect(at(names.kev).diff).toEqual([
      ['', 'Before', 'After'],
      ['Severity', 'Medium', 'Medium'],
      ['zlib', 'no fix yet', 'no fix yet'],
      ['Known exploited', 'not listed', 'added 2099-01-08, due 2099-01-29, used in ransomware campaigns'],
    ]);
    expect(at(names.hostile)).toMatchObject({ kind: 'new', sentence: `${HOSTILE.Name} was published; it affects 0 images.` });
    // Each links the vulnerability's page.
    for (const c of shown) expect(c.html).toContain('href="/ui/vulnerabilities/CVE-2099-');
  });

  it('counts the images of each side as GET /tarsier/v1/notifications/{name} lists them, and links the first as it orders them', async () => {
    const shown = changes(await page(t));
    for (const c of shown) {
      const api = await apiSides(t, c.name);
      const expected: Record<string, number> = {};
      if (c.kind === 'kev') {
        // One version on both sides: one count.
        expect(api.old!.length).toBe(api.new!.length);
        expected.new = api.new!.length;
      } else {
        if (api.old) expected.old = api.old.length;
        if (api.new) expected.new = api.new.length;
      }
      expect(c.counts, c.sentence).toEqual(expected);

      const listed = (c.kind === 'withdrawn' ? api.old : api.new)!;
      expect(c.images, c.sentence).toEqual(listed.slice(0, FIRST_IMAGES).map((i) => `/ui/images/${i.Digest}`));
      if (listed.length > FIRST_IMAGES) {
        expect(c.more).toEqual({
          href: `/ui/vulnerabilities/${encodeURIComponent(api.notification.New?.Vulnerability.Name ?? api.notification.Old.Vulnerability.Name)}`,
          text: `${listed.length - FIRST_IMAGES} more`,
        });
      } else {
        expect(c.more).toBeUndefined();
      }
    }
    // The same manifest in three repositories is three images (as the API counts), shown by repository and tag.
    const zlib = shown.find((c) => c.name === names.zlibNew)!;
    expect(zlib.counts).toEqual({ new: 4 });
    expect(zlib.images).toEqual([`/ui/images/${digests.a}`, `/ui/images/${digests.b}`, `/ui/images/${digests.a}`]);
    expect(text(elements(zlib.html, 'p', 'affected-images')[0]!.html)).toBe(
      'Affected: team/app:v1, team/app:v2, team/mirror:v1 and 1 more',
    );
    const jq = shown.find((c) => c.name === names.withdrawn)!;
    expect(jq.images).toEqual([`/ui/images/${digests.b}`]);
    expect(text(elements(jq.html, 'p', 'affected-images')[0]!.html)).toBe('Affected before: team/app:v2');
  });

  it('escapes what sources and clients wrote', async () => {
    const body = await page(t);
    const hostile = changes(body).find((c) => c.name === names.hostile)!;
    expect(body).not.toContain('<script>alert');
    expect(body).not.toContain('<b>not-installed');
    expect(hostile.html).toContain('CVE-2099-3666 &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(hostile.html).toContain('&lt;b&gt;not-installed&lt;/b&gt;');
    expect(hostile.html).toContain(`href="/ui/vulnerabilities/${encodeURIComponent(HOSTILE.Name)}"`);
    expect(hostile.diff[2]).toEqual(['<b>not-installed</b>', 'fixed in 1.0']);
  });

  it("charts exposure: today's numbers are the images API's, per severity, in a table beside the chart", async () => {
    const body = await page(t);
    // Distinct vulnerabilities by name over every image's packages, each at its highest severity.
    const highest = new Map<string, number>();
    const ranks = ['Low', 'Medium', 'High', 'Critical'];
    for (const digest of [digests.a, digests.b]) {
      const res = await t.app.inject({ url: `/tarsier/v1/images/${digest}` });
      expect(res.statusCode, res.body).toBe(200);
      for (const p of json(res).Image.Packages as Array<{ Vulnerabilities: Array<{ Name: string; Severity: string }> }>) {
        for (const v of p.Vulnerabilities) {
          const rank = ranks.indexOf(v.Severity === 'Defcon1' ? 'Critical' : v.Severity);
          if (rank >= 0) highest.set(v.Name, Math.max(rank, highest.get(v.Name) ?? -1));
        }
      }
    }
    const direct = Object.fromEntries(ranks.map((s, i) => [s, [...highest.values()].filter((r) => r === i).length]));
    expect(direct).toEqual({ Low: 0, Medium: 1, High: 0, Critical: 1 });

    const table = exposureTable(body);
    expect(table.size).toBe(EXPOSURE_DAYS);
    const days = [...table.keys()];
    const today = new Date().toISOString().slice(0, 10);
    expect(days[days.length - 1]).toBe(today);
    expect(days).toEqual([...days].sort());
    expect(table.get(today)).toEqual({ Critical: 1, High: 0, Medium: 1, Low: 0 });

    // The chart draws the same numbers, and says what it is.
    const data = JSON.parse(/<script type="application\/json" id="chart-data">([\s\S]*?)<\/script>/.exec(body)![1]!);
    expect(data.exposure).toMatchObject({ kind: 'lines', target: 'exposure-chart' });
    expect(data.exposure.x).toEqual(days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000));
    for (const series of data.exposure.series as Array<{ label: string; values: number[] }>) {
      expect(series.values).toEqual(days.map((d) => table.get(d)![series.label]));
    }
    expect(body).toMatch(/<section class="chart" aria-label="Exposure over time">/);
    expect(body).toMatch(/<div\s+id="exposure-chart"\s+class="chart-canvas"/);
    expect(body).toMatch(/<details>\s*<summary>Data<\/summary>\s*<table data-testid="exposure-table">/);
  });

  it('counts past days from the versions live at the end of each day', async () => {
    // Spread the versions over the last days (the API wrote them all just now): bash High from ten
    // days ago, Critical from five, fixed again two days ago; jq published seven days ago and
    // withdrawn three days ago; zlib stays today's.
    const versions = async () =>
      (
        await t.pool.query<{ id: number; name: string; severity: string; created_at: Date; deleted_at: Date | null }>(
          `SELECT id, name, severity::text, created_at, deleted_at FROM vulnerability WHERE name = ANY ($1) ORDER BY name, id`,
          [[BASH.Name, JQ.Name, ZLIB.Name]],
        )
      ).rows;
    const bash = (await versions()).filter((v) => v.name === BASH.Name);
    expect(bash.map((v) => v.severity)).toEqual(['High', 'Critical', 'Critical']);
    const shift = async (id: number, created: number, deleted: number | null) =>
      t.pool.query(
        `UPDATE vulnerability SET created_at = now() - $2 * interval '1 day',
                deleted_at = CASE WHEN $3::int IS NULL THEN NULL ELSE now() - $3 * interval '1 day' END WHERE id = $1`,
        [id, created, deleted],
      );
    await shift(bash[0]!.id, 10, 5);
    await shift(bash[1]!.id, 5, 2);
    await shift(bash[2]!.id, 2, null);
    const jq = (await versions()).filter((v) => v.name === JQ.Name);
    expect(jq).toHaveLength(1);
    await shift(jq[0]!.id, 7, 3);

    const table = exposureTable(await page(t));
    const now = Date.now();
    // The rule, written again: a version counts on a day when it was live at the day's end (now, for today).
    const rows = await versions();
    const severities = ['Critical', 'High', 'Medium', 'Low'];
    for (const [day, counts] of table) {
      const end = Math.min(Date.parse(`${day}T00:00:00Z`) + 86_400_000, now);
      const live = rows.filter((v) => v.created_at.getTime() <= end && (v.deleted_at === null || v.deleted_at.getTime() > end));
      const highest = new Map<string, number>();
      for (const v of live) {
        const rank = severities.length - severities.indexOf(v.severity);
        if (rank <= severities.length) highest.set(v.name, Math.max(rank, highest.get(v.name) ?? 0));
      }
      const expected = Object.fromEntries(
        severities.map((s, i) => [s, [...highest.values()].filter((r) => r === severities.length - i).length]),
      );
      expect(counts, day).toEqual(expected);
    }
    const ago = (days: number) => new Date(now - days * 86_400_000).toISOString().slice(0, 10);
    expect(table.get(ago(12))).toEqual({ Critical: 0, High: 0, Medium: 0, Low: 0 });
    expect(table.get(ago(8))).toEqual({ Critical: 0, High: 1, Medium: 0, Low: 0 });
    expect(table.get(ago(6))).toEqual({ Critical: 0, High: 1, Medium: 0, Low: 1 });
    expect(table.get(ago(4))).toEqual({ Critical: 1, High: 0, Medium: 0, Low: 1 });
    expect(table.get(ago(2))).toEqual({ Critical: 1, High: 0, Medium: 0, Low: 0 });
    expect(table.get(ago(0))).toEqual({ Critical: 1, High: 0, Medium: 1, Low: 0 });
  });

  it(`pages ${CHANGES_PAGE} at a time, older with a link`, async () => {
    for (let i = 0; i < CHANGES_PAGE; i++) {
      await addVulnerability(t, NAMESPACE, {
        Name: `CVE-2099-4${String(i).padStart(3, '0')}`,
        Severity: 'Low',
        FixedIn: [{ Name: 'not-installed', Version: '1.0' }],
      });
    }
    const all = await notificationNames(t);
    expect(all).toHaveLength(CHANGES_PAGE + 8);

    const first = await page(t);
    expect(changes(first).map((c) => c.name)).toEqual(all.slice(0, CHANGES_PAGE));
    expect(elements(first, 'a', 'newest-page')).toEqual([]);
    const older = elements(first, 'a', 'older-page');
    expect(older).toHaveLength(1);
    expect(text(older[0]!.html)).toBe('Older');

    const second = await page(t, older[0]!.attributes.href!);
    expect(changes(second).map((c) => c.name)).toEqual(all.slice(CHANGES_PAGE));
    expect(elements(second, 'a', 'older-page')).toEqual([]);
    expect(elements(second, 'a', 'newest-page').map((a) => a.attributes.href)).toEqual(['/ui/changes']);
    // The exposure chart heads the newest page only.
    expect(elements(first, 'table', 'exposure-table')).toHaveLength(1);
    expect(elements(second, 'table', 'exposure-table')).toEqual([]);

    // A token of another list is refused with a page saying so.
    const images = await t.app.inject({ url: '/tarsier/v1/images?limit=1' });
    const foreign = json(images).NextPage as string;
    expect(foreign).toBeDefined();
    const refused = await t.app.inject({ url: `/ui/changes?page=${encodeURIComponent(foreign)}` });
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.body).toContain('start again from the first page');
  });
});

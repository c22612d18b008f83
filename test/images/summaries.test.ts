/**
 * Image summaries (migration 0009): computed when an ancestry is stored, marked stale by the
 * triggers when a vulnerability change may alter them (a match added or removed, a version
 * retired, a KEV change), and computed again by the refresher, woken by the triggers' NOTIFY.
 */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SummaryRefresher } from '../../src/images/summaries.js';
import { refreshStaleSummaries } from '../../src/store/summaries.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { silentLog } from '../helpers/db.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { debianLayer } from '../helpers/oci-image.js';
import { whenDone } from '../helpers/when-done.js';

interface SummaryRow {
  counts: Record<string, { total: number; fixable: number }>;
  known_exploited: number;
  risk: number[];
  stale: boolean;
}

/** POST /ancestry 'app': one Debian 9 layer, served by the feed server. */
async function postDebianImage(t: TestApp, feeds: FeedServer): Promise<void> {
  const blob = debianLayer(9);
  feeds.put('/base', blob);
  const res = await t.app.inject({
    method: 'POST',
    url: '/ancestry',
    payload: {
      ancestry_name: 'app',
      format: 'Docker',
      layers: [{ hash: `sha256:${createHash('sha256').update(blob).digest('hex')}`, path: feeds.url('/base') }],
    },
  });
  expect(res.statusCode, res.body).toBe(200);
}

describe('image summaries', () => {
  let t: TestApp;
  let feeds: FeedServer;
  let refresher: SummaryRefresher;
  const summary = async (): Promise<SummaryRow> =>
    (
      await t.pool.query<SummaryRow>(
        "SELECT s.counts, s.known_exploited, s.risk, s.stale FROM ancestry_summary s JOIN ancestry a ON a.id = s.ancestry_id WHERE a.name = 'app'",
      )
    ).rows[0]!;
  /** A debian:9 vulnerability of one package through the v1 API. */
  const addDebianVulnerability = (Name: string, Severity: string, feature: string, Version: string) =>
    addVulnerability(t, 'debian:9', { Name, Severity, FixedIn: [{ Name: feature, Version }] });
  /** Waits until the refresher has computed every stale summary (it was woken by the change's NOTIFY). */
  const settled = async () => {
    await expect.poll(async () => (await t.pool.query('SELECT count(*)::int AS n FROM ancestry_summary WHERE stale')).rows[0].n).toBe(0);
    await refresher.idle();
  };

  beforeAll(async () => {
    t = await testApp();
    feeds = await startFeedServer();
    await addDebianVulnerability('CVE-2099-1001', 'High', 'bash', '4.4-5+deb9u1');
    await postDebianImage(t, feeds);
    refresher = new SummaryRefresher({ pool: t.pool, connection: t.pool.options, log: silentLog });
    await refresher.start();
    whenDone(() => refresher.stop());
  });

  it('are computed with the ancestry, counted as the images API counts', async () => {
    expect(await summary()).toEqual({
      counts: { High: { total: 1, fixable: 1 } },
      known_exploited: 0,
      // known exploited, Defcon1, Critical, High, Medium, Low, Negligible, Unknown
      risk: [0, 0, 0, 1, 0, 0, 0, 0],
      stale: false,
    });
    const ancestry = json(await t.app.inject({ url: '/ancestry/app' })).ancestry;
    expect(ancestry.layers).toHaveLength(1);
  });

  it('follow a new vulnerability, a severity change and a deletion', async () => {
    await addDebianVulnerability('CVE-2099-1002', 'Critical', 'zlib', 'None');
    await settled();
    expect(await summary()).toMatchObject({
      counts: { High: { total: 1, fixable: 1 }, Critical: { total: 1, fixable: 0 } },
      risk: [0, 0, 1, 1, 0, 0, 0, 0],
    });

    const edit = await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A9/vulnerabilities/CVE-2099-1001',
      payload: { Vulnerability: { Name: 'CVE-2099-1001', NamespaceName: 'debian:9', Severity: 'Low' } },
    });
    expect(edit.statusCode, edit.body).toBe(200);
    await settled();
    expect((await summary()).counts).toEqual({ Low: { total: 1, fixable: 1 }, Critical: { total: 1, fixable: 0 } });

    const removed = await t.app.inject({ method: 'DELETE', url: '/v1/namespaces/debian%3A9/vulnerabilities/CVE-2099-1002' });
    expect(removed.statusCode, removed.body).toBe(200);
    await settled();
    expect(await summary()).toMatchObject({ counts: { Low: { total: 1, fixable: 1 } }, risk: [0, 0, 0, 0, 0, 1, 0, 0] });
  });

  it('count known exploited vulnerabilities once KEV lists one, and rank those first', async () => {
    await t.pool.query(
      `INSERT INTO kev (cve, vendor_project, product, vulnerability_name, date_added, due_date, known_ransomware_campaign_use, required_action)
       VALUES ('CVE-2099-1001', 'GNU', 'bash', 'Example', '2099-01-05', '2099-01-26', 'Unknown', 'Update.')`,
    );
    await settled();
    expect(await summary()).toMatchObject({ known_exploited: 1, risk: [1, 0, 0, 0, 0, 1, 0, 0] });
  });
});

describe('a summary computed while a change is made', () => {
  it('is marked stale again after the refresher commits, never left fresh without the change', async () => {
    const t = await testApp();
    const feeds = await startFeedServer();
    await postDebianImage(t, feeds);
    await t.pool.query('UPDATE ancestry_summary SET stale = true');

    // A refresher has claimed the summary (its row lock) and computed it, not committed yet.
    const refresher = await t.pool.connect();
    try {
      await refresher.query('BEGIN');
      expect(await refreshStaleSummaries(refresher, 100)).toBe(1);
      // Meanwhile a vulnerability affecting the image is written: its trigger must wait for the row.
      const write = addVulnerability(t, 'debian:9', {
        Name: 'CVE-2099-1009',
        Severity: 'High',
        FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }],
      });
      await expect
        .poll(
          async () =>
            (
              await t.pool.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
              )
            ).rows[0].n,
        )
        .toBeGreaterThan(0);
      await refresher.query('COMMIT');
      await write;
    } finally {
      refresher.release();
    }
    // The count the refresher stored missed the vulnerability: it is stale, to be computed again.
    const { rows } = await t.pool.query<{ stale: boolean; counts: unknown }>('SELECT stale, counts FROM ancestry_summary');
    expect(rows).toEqual([{ stale: true, counts: {} }]);
  });
});

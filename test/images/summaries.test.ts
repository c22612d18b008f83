/**
 * Image summaries (migration 0009): computed when an ancestry is stored; a vulnerability change
 * that may alter them (a match added or removed, a version retired, a KEV change) is queued by the
 * triggers (migration 0024), and the refresher, woken by their NOTIFY, marks the summaries it
 * touches stale and computes them again.
 */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SummaryRefresher } from '../../src/images/summaries.js';
import { withTransaction } from '../../src/store/pool.js';
import { markQueuedChange, refreshStaleSummaries } from '../../src/store/summaries.js';
import { summariesNotCurrent } from '../helpers/dashboard.js';
import { markAllQueued, summaryCurrent } from '../helpers/summaries.js';
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
  /** Waits until the refresher has applied every queued change and computed every stale summary (it was woken by the change's NOTIFY). */
  const settled = async () => {
    await expect.poll(() => summariesNotCurrent(t.pool)).toBe(0);
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

/** Waits until some statement of this database waits for a lock. */
async function someoneWaitsForALock(t: TestApp): Promise<void> {
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
}

describe('a summary computed while a change is made', () => {
  it('is marked stale again after the refresher commits, never left current without the change', async () => {
    const t = await testApp();
    const feeds = await startFeedServer();
    await postDebianImage(t, feeds);
    await t.pool.query('UPDATE ancestry_summary SET stale = true');
    const ancestry = (await t.pool.query<{ id: number }>("SELECT id FROM ancestry WHERE name = 'app'")).rows[0]!.id;

    // A refresher has claimed the summary (its row lock) and computed it, not committed yet.
    const refresher = await t.pool.connect();
    try {
      await refresher.query('BEGIN');
      expect(await refreshStaleSummaries(refresher, 100)).toBe(1);
      // Meanwhile a vulnerability affecting the image is written: it only queues the change, so it
      // commits without waiting for the summary's lock.
      await addVulnerability(t, 'debian:9', {
        Name: 'CVE-2099-1009',
        Severity: 'High',
        FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }],
      });
      // The marking of the change must wait for the refresher's row lock.
      const marking = markAllQueued(t.pool);
      await someoneWaitsForALock(t);
      await refresher.query('COMMIT');
      // Committed, the summary says fresh but missed the vulnerability: lists do not take it as current.
      expect(await summaryCurrent(t.pool, ancestry)).toBe(false);
      await marking;
    } finally {
      refresher.release();
    }
    // The count the refresher stored missed the vulnerability: it is stale, to be computed again.
    const { rows } = await t.pool.query<{ stale: boolean; counts: unknown }>('SELECT stale, counts FROM ancestry_summary');
    expect(rows).toEqual([{ stale: true, counts: {} }]);
    expect(await summaryCurrent(t.pool, ancestry)).toBe(false);
  });
});

describe('a change on a package of many images', () => {
  const FLEET = 1_500;
  /** Setting up the fleet and computing it takes seconds on a busy machine. */
  const SLOW = { timeout: 120_000 };
  /** An image 'app' and FLEET more ancestries holding the same packages, all summaries fresh; no refresher runs. */
  const fleetApp = async (): Promise<TestApp> => {
    const t = await testApp();
    const feeds = await startFeedServer();
    await postDebianImage(t, feeds);
    await t.pool.query(
      `WITH a AS (INSERT INTO ancestry (name) SELECT 'fleet-' || g FROM generate_series(1, $1::int) g RETURNING id),
            f AS (INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position)
                  SELECT a.id, af.feature_version_id, af.position FROM a, ancestry_feature af JOIN ancestry o ON o.id = af.ancestry_id AND o.name = 'app')
       INSERT INTO ancestry_summary (ancestry_id, counts, known_exploited, risk, stale) SELECT id, '{}', 0, '{}', true FROM a`,
      [FLEET],
    );
    while ((await withTransaction(t.pool, (client) => refreshStaleSummaries(client, 1_000))) > 0);
    return t;
  };
  const bashVulnerability = (t: TestApp, Name: string) =>
    addVulnerability(t, 'debian:9', { Name, Severity: 'Critical', FixedIn: [{ Name: 'bash', Version: 'None' }] });
  /** How many summaries hold each count (all current once settled). */
  const countsHeld = async (t: TestApp) =>
    (
      await t.pool.query<{ counts: unknown; n: number }>(
        'SELECT counts, count(*)::int AS n FROM ancestry_summary GROUP BY counts ORDER BY counts::text',
      )
    ).rows;
  const refresherOf = async (t: TestApp): Promise<SummaryRefresher> => {
    const refresher = new SummaryRefresher({ pool: t.pool, connection: t.pool.options, log: silentLog });
    await refresher.start();
    whenDone(() => refresher.stop());
    return refresher;
  };

  it(
    'is written without touching the summaries: it commits while every one is locked',
    async () => {
      const t = await fleetApp();
      const locker = await t.pool.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('SELECT ancestry_id FROM ancestry_summary FOR UPDATE');
        // Would wait for the locker if the write locked or updated a summary.
        await bashVulnerability(t, 'CVE-2099-3001');
        expect((await t.pool.query('SELECT cardinality(feature_versions) AS n FROM summary_change')).rows).toEqual([{ n: 1 }]);
        const app = (await t.pool.query<{ id: number }>("SELECT id FROM ancestry WHERE name = 'app'")).rows[0]!.id;
        // Not yet marked, but no list takes the summary as current.
        expect((await t.pool.query('SELECT count(*)::int AS n FROM ancestry_summary WHERE stale')).rows[0].n).toBe(0);
        expect(await summaryCurrent(t.pool, app)).toBe(false);
        await locker.query('COMMIT');
      } finally {
        locker.release();
      }
    },
    SLOW.timeout,
  );

  it(
    'is applied by the refresher until every summary is current and counts it',
    async () => {
      const t = await fleetApp();
      await refresherOf(t);
      await bashVulnerability(t, 'CVE-2099-3002');
      await expect.poll(() => summariesNotCurrent(t.pool), SLOW).toBe(0);
      expect(await countsHeld(t)).toEqual([{ counts: { Critical: { total: 1, fixable: 0 } }, n: FLEET + 1 }]);
    },
    SLOW.timeout,
  );

  it(
    'resumes from its cursor when the transaction marking it dies',
    async () => {
      const t = await fleetApp();
      await bashVulnerability(t, 'CVE-2099-3003');
      // One batch marked and committed, the next one cut short by its connection's end.
      expect(await withTransaction(t.pool, (client) => markQueuedChange(client, 500))).toBe(500);
      const { marked_through: cursor } = (await t.pool.query('SELECT marked_through FROM summary_change')).rows[0];
      const crashing = await t.pool.connect();
      await crashing.query('BEGIN');
      expect(await markQueuedChange(crashing, 500)).toBe(500);
      const pid = (await crashing.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      crashing.on('error', () => {});
      await t.pool.query('SELECT pg_terminate_backend($1)', [pid]);
      crashing.release(true);
      // Its batch was rolled back: the cursor and the stale flags are those of the first batch.
      expect((await t.pool.query('SELECT marked_through FROM summary_change')).rows).toEqual([{ marked_through: cursor }]);
      expect((await t.pool.query('SELECT count(*)::int AS n FROM ancestry_summary WHERE stale')).rows[0].n).toBe(500);
      // A refresher (this replica's next pass, or another's) goes on from there.
      await refresherOf(t);
      await expect.poll(() => summariesNotCurrent(t.pool), SLOW).toBe(0);
      expect(await countsHeld(t)).toEqual([{ counts: { Critical: { total: 1, fixable: 0 } }, n: FLEET + 1 }]);
    },
    SLOW.timeout,
  );

  it(
    'is shared by the refreshers: a change one has claimed is left to it, the others apply the rest and resume it after',
    async () => {
      const t = await fleetApp();
      await bashVulnerability(t, 'CVE-2099-3004');
      await addVulnerability(t, 'debian:9', { Name: 'CVE-2099-3005', Severity: 'Low', FixedIn: [{ Name: 'zlib', Version: 'None' }] });
      // One replica has claimed the first change ...
      const busy = await t.pool.connect();
      try {
        await busy.query('BEGIN');
        await busy.query('SELECT id FROM summary_change ORDER BY id LIMIT 1 FOR UPDATE');
        // ... two others run meanwhile: they skip it, apply the second and compute what it marked.
        await Promise.all([refresherOf(t), refresherOf(t)]);
        await expect
          .poll(
            async () =>
              (
                await t.pool.query<{ queued: number; stale: number }>(
                  'SELECT (SELECT count(*)::int FROM summary_change) AS queued, (SELECT count(*)::int FROM ancestry_summary WHERE stale) AS stale',
                )
              ).rows[0],
            SLOW,
          )
          .toEqual({ queued: 1, stale: 0 });
        // The first replica marks one batch and stops (as a replica stopping does): its commit's
        // NOTIFY wakes the others, which go on from its cursor.
        expect(await markQueuedChange(busy, 1_000)).toBe(1_000);
        await busy.query('COMMIT');
      } finally {
        busy.release();
      }
      await expect.poll(() => summariesNotCurrent(t.pool), SLOW).toBe(0);
      expect(await countsHeld(t)).toEqual([
        { counts: { Low: { total: 1, fixable: 0 }, Critical: { total: 1, fixable: 0 } }, n: FLEET + 1 },
      ]);
    },
    SLOW.timeout,
  );
});

import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportKey, type ReportView } from '../../../src/api/v1/report-format.js';
import { ReportCache } from '../../../src/reports/report-cache.js';
import { testApp, type TestApp } from '../../helpers/app.js';
import { REPORT_LAYERS, REPORT_QUERIES, reportBytes, seedReportScenario, type ReportScenario } from '../../helpers/report-scenario.js';

/**
 * Layer reports assembled from per-feature-version fragments, kept current by the database's
 * change notifications: the bytes are those the whole-report serializer wrote, and a change drops
 * exactly the reports and fragments that show it.
 */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-fragments-'));
  await chmod(dir, 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const FULL_B: ReportView = { revision: 'B', features: true, vulnerabilities: true };
const FULL_QUERY = '?features&vulnerabilities';
const sha256 = (body: Buffer) => createHash('sha256').update(body).digest('hex');

async function scenario(): Promise<{ t: TestApp; cache: ReportCache; seeded: ReportScenario }> {
  const cache = new ReportCache();
  const t = await testApp({ yaml: `  api:\n    localroots: [${dir}]\n`, reports: cache });
  const seeded = await seedReportScenario(t, dir);
  return { t, cache, seeded };
}

/** The same report built by another app over the same database, with an empty cache. */
async function fromScratch(t: TestApp, layer: string): Promise<Buffer> {
  const fresh = await testApp({ yaml: `  api:\n    localroots: [${dir}]\n`, pool: t.pool });
  return reportBytes(fresh, layer, FULL_QUERY, 'B');
}

describe('layer reports from fragments', () => {
  it('are byte for byte what the whole-report serializer wrote, built and then cached, in both revisions', async () => {
    // Hashes of the reports of this scenario as served before reports were assembled from fragments.
    const expected = JSON.parse(
      await readFile(new URL('../../fixtures/expected/layer-reports.sha256.json', import.meta.url), 'utf8'),
    ) as Record<string, { sha256: string; bytes: number }>;
    const { t, cache } = await scenario();
    // TARSIER_RECORD_REPORTS=1 writes what is served as the new expectation: for a change that
    // alters reports on purpose (a new IndexedByVersion), whose diff is then reviewed.
    const recorded: Record<string, { sha256: string; bytes: number }> = {};
    for (const pass of ['built', 'cached']) {
      for (const layer of REPORT_LAYERS) {
        for (const query of REPORT_QUERIES) {
          for (const revision of ['A', 'B'] as const) {
            const body = await reportBytes(t, layer, query, revision);
            const name = `${layer}${query} ${revision}`;
            recorded[name] = { sha256: sha256(body), bytes: body.length };
            if (process.env.TARSIER_RECORD_REPORTS === '1') continue;
            expect({ pass, name, bytes: body.length, sha256: sha256(body) }).toEqual({ pass, name, ...expected[name] });
          }
        }
      }
    }
    if (process.env.TARSIER_RECORD_REPORTS === '1')
      await writeFile(
        new URL('../../fixtures/expected/layer-reports.sha256.json', import.meta.url),
        `${JSON.stringify(recorded, null, 2)}\n`,
      );
    expect(cache.bytes.reports).toBeGreaterThan(0);
    expect(cache.bytes.fragments).toBeGreaterThan(0);
  });

  it('drop exactly the reports a vulnerability change affects; those are rebuilt as from scratch', async () => {
    const { t, cache, seeded } = await scenario();
    const before = new Map<string, Buffer>();
    for (const layer of REPORT_LAYERS) before.set(layer, await reportBytes(t, layer, FULL_QUERY, 'B'));
    const cached = (layer: string) => cache.report(reportKey(layer, FULL_B));
    const held = new Map(REPORT_LAYERS.map((layer) => [layer, cached(layer)]));
    expect([...held.values()].every(Boolean)).toBe(true);
    // A cached report is answered without a database connection (freshness comes from the listener).
    let checkouts = 0;
    t.pool.on('acquire', () => checkouts++);
    expect((await reportBytes(t, 'stretch-app', FULL_QUERY, 'B')).equals(before.get('stretch-app')!)).toBe(true);
    expect(checkouts).toBe(0);

    // A new vulnerability of a package only the Debian 10 layer has: its report alone changes.
    const onlyBuster = seeded.busterSources[0]!;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/debian%3A10/vulnerabilities',
      payload: { Vulnerability: { Name: 'CVE-2099-0001', Severity: 'Critical', FixedIn: [{ Name: onlyBuster, Version: 'None' }] } },
    });
    expect(res.statusCode, res.body).toBe(201);
    // The write's answer came after this replica heard of it: the stale report is gone already.
    expect(cached('buster-pg')).toBeUndefined();
    expect(cached('stretch-base')).toBe(held.get('stretch-base'));
    expect(cached('stretch-app')).toBe(held.get('stretch-app'));
    const rebuilt = await reportBytes(t, 'buster-pg', FULL_QUERY, 'B');
    expect(rebuilt.toString()).toContain('CVE-2099-0001');
    expect(rebuilt.equals(await fromScratch(t, 'buster-pg'))).toBe(true);
    expect((await reportBytes(t, 'stretch-app', FULL_QUERY, 'B')).equals(before.get('stretch-app')!)).toBe(true);
  });

  it('follow changes made behind the API, by any writer, once the database announces them', async () => {
    const { t, cache } = await scenario();
    const first = await reportBytes(t, 'stretch-app', FULL_QUERY, 'B');
    const stretchVulnerability = /"Name":"(CVE-2024-\d+)","NamespaceName":"debian:9"/.exec(first.toString())![1]!;
    await reportBytes(t, 'buster-pg', FULL_QUERY, 'B');
    const buster = cache.report(reportKey('buster-pg', FULL_B));
    expect(buster).toBeDefined();
    await t.pool.query(
      `UPDATE vulnerability SET description = 'edited by hand' WHERE name = $1 AND deleted_at IS NULL
         AND namespace_id = (SELECT id FROM namespace WHERE name = 'debian:9')`,
      [stretchVulnerability],
    );
    await expect.poll(() => cache.report(reportKey('stretch-app', FULL_B))).toBeUndefined();
    const edited = await reportBytes(t, 'stretch-app', FULL_QUERY, 'B');
    expect(edited.toString()).toContain('edited by hand');
    expect(edited.equals(await fromScratch(t, 'stretch-app'))).toBe(true);
    expect(cache.report(reportKey('buster-pg', FULL_B))).toBe(buster);
  });

  it('drop the reports of a deleted layer and of its descendants', async () => {
    const { t } = await scenario();
    await reportBytes(t, 'stretch-app', FULL_QUERY, 'B');
    expect((await t.app.inject({ method: 'DELETE', url: '/v1/layers/stretch-base' })).statusCode).toBe(200);
    for (const layer of ['stretch-base', 'stretch-app']) {
      expect((await t.app.inject({ url: `/v1/layers/${layer}${FULL_QUERY}` })).statusCode).toBe(404);
    }
  });

  it('are served from the database alone while the listener is down, and cached again once it is back', async () => {
    const { t, cache } = await scenario();
    const first = await reportBytes(t, 'buster-pg', FULL_QUERY, 'B');
    const listener = `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN tarsier_report_changes'`;
    await expect.poll(async () => (await t.pool.query(listener)).rowCount).toBe(1);
    await t.pool.query(`SELECT pg_terminate_backend(pid) FROM (${listener}) l`);
    await expect.poll(() => cache.live).toBe(false);
    // Unheard: a change made while nobody listens. It must show, not the cached report.
    await t.pool.query(
      `UPDATE vulnerability SET link = 'https://example.org/heard-nowhere' WHERE deleted_at IS NULL
         AND namespace_id = (SELECT id FROM namespace WHERE name = 'debian:10')`,
    );
    const whileDown = await reportBytes(t, 'buster-pg', FULL_QUERY, 'B');
    expect(whileDown.equals(first)).toBe(false);
    expect(whileDown.toString()).toContain('heard-nowhere');
    await expect.poll(() => cache.live, { timeout: 10_000 }).toBe(true);
    expect((await reportBytes(t, 'buster-pg', FULL_QUERY, 'B')).equals(whileDown)).toBe(true);
    expect(cache.report(reportKey('buster-pg', FULL_B))).toBeDefined();
  });
});

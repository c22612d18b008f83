/**
 * The osv source as the server runs it: OSV.dev's per-ecosystem `all.zip` archives (served with
 * ETag and Last-Modified by a real HTTP server, or from a local mirror laid out as upstream) and a
 * local directory of records, read record by record and written in batches.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { APPLICATION_ECOSYSTEMS } from '../../src/ecosystems/catalog.js';
import { catalogEcosystem, parseOsvRecord } from '../../src/ecosystems/osv/records.js';
import { osvSource } from '../../src/ecosystems/osv/updater.js';
import { runnerSettings } from '../../src/settings.js';
import { exportBundle, importBundle } from '../../src/updater/bundle.js';
import { storeEnrichment } from '../../src/store/enrichment.js';
import { withTransaction } from '../../src/store/pool.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { SOURCES } from '../../src/updater/sources.js';
import { freshPool, silentLog } from '../helpers/db.js';
import { startFeedServer } from '../helpers/feed-server.js';
import { whenDone } from '../helpers/when-done.js';

const OSV = fileURLToPath(new URL('../fixtures/feeds/osv/', import.meta.url));
const ECOSYSTEMS = APPLICATION_ECOSYSTEMS.map((e) => e.osvName);

/** The fixture records of an ecosystem: file name → text. */
function fixtureRecords(ecosystem: string): Map<string, string> {
  const dir = join(OSV, ecosystem);
  return new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
  );
}

/** A zip archive (written by Info-ZIP's zip) of these files. */
function zipOf(files: ReadonlyMap<string, string>): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'tarsier-osv-zip-'));
  try {
    for (const [name, text] of files) writeFileSync(join(dir, name), text);
    execFileSync('zip', ['-q', '-X', 'all.zip', ...files.keys()], { cwd: dir });
    return readFileSync(join(dir, 'all.zip'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runnerFor(pool: pg.Pool, url: string, ecosystems?: readonly string[]) {
  const list = ecosystems ? `, ecosystems: [${ecosystems.join(', ')}]` : '';
  const config = parseConfig(`clair:\n  updater:\n    sources:\n      osv: { url: "${url}"${list} }\n`);
  return new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog });
}

/** What the records say: the live vulnerabilities each namespace should hold (the parser is tested on its own). */
function expectedNames(ecosystem: string, records: ReadonlyMap<string, string>): string[] {
  return [...records.values()]
    .flatMap((text) => parseOsvRecord(text, (name) => (name === ecosystem ? catalogEcosystem(name) : undefined)).map((v) => v.name))
    .sort();
}

async function liveByNamespace(pool: pg.Pool): Promise<Record<string, string[]>> {
  const { rows } = await pool.query<{ namespace: string; names: string[] }>(`
    SELECT n.name AS namespace, coalesce(array_agg(v.name ORDER BY v.name) FILTER (WHERE v.id IS NOT NULL), '{}') AS names
    FROM namespace n LEFT JOIN vulnerability v ON v.namespace_id = n.id AND v.deleted_at IS NULL AND v.updater = 'osv'
    GROUP BY n.name`);
  return Object.fromEntries(rows.map((r) => [r.namespace, r.names]));
}

async function notifications(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ change: string }>(`
    SELECT coalesce(o.name, n.name) || ': ' || CASE WHEN o.id IS NULL THEN 'new' WHEN n.id IS NULL THEN 'withdrawn' ELSE 'changed' END AS change
    FROM notification x LEFT JOIN vulnerability o ON o.id = x.old_vulnerability_id LEFT JOIN vulnerability n ON n.id = x.new_vulnerability_id
    ORDER BY 1`);
  return rows.map((r) => r.change);
}

/** The fixed versions a stored vulnerability lists, as "package fixed". */
async function fixes(pool: pg.Pool, namespace: string, name: string): Promise<string[]> {
  const { rows } = await pool.query<{ fix: string }>(
    `SELECT f.name || ' ' || coalesce(fi.fixed_version, 'None') AS fix
     FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id JOIN vulnerability_fixedin fi ON fi.vulnerability_id = v.id
     JOIN feature f ON f.id = fi.feature_id WHERE n.name = $1 AND v.name = $2 AND v.deleted_at IS NULL ORDER BY 1`,
    [namespace, name],
  );
  return rows.map((r) => r.fix);
}

describe('the osv source', () => {
  it("reads every ecosystem's all.zip over HTTP, each into its namespace, and downloads only what changed", async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    const records = new Map(ECOSYSTEMS.map((e) => [e, fixtureRecords(e)]));
    for (const [ecosystem, files] of records) server.put(`/osv/${ecosystem}/all.zip`, zipOf(files));
    const runner = runnerFor(pool, server.url('/osv/'));
    // NVD's data on the CVE GHSA-p6mc-m468-83gw names as its alias, stored before the records come.
    const nvd = { CVSSv3: { Score: 7.4, Vectors: 'CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:H/A:H' } };
    await withTransaction(pool, (client) => storeEnrichment(client, new Map([['CVE-2020-8203', { nvd, severity: 'High' as const }]])));

    const first = await runner.run(osvSource);
    expect(first, first.error).toMatchObject({ status: 'updated' });
    const live = await liveByNamespace(pool);
    for (const row of APPLICATION_ECOSYSTEMS)
      expect(live[row.namespace], row.namespace).toEqual(expectedNames(row.osvName, records.get(row.osvName)!));
    // 48 fixture records, one withdrawn (GO-2022-0617).
    expect(first.records).toBe(47);
    expect(live['go']).not.toContain('GO-2022-0617');
    expect(await fixes(pool, 'npm', 'GHSA-p6mc-m468-83gw')).toEqual([
      'lodash 4.17.19',
      'lodash-es 4.17.20',
      'lodash.pick None',
      'lodash.set None',
      'lodash.setwith None',
      'lodash.update None',
      'lodash.updatewith None',
    ]);
    // Its alias brings NVD's data to it, beside OSV's own scores.
    const { rows: enriched } = await pool.query<{ metadata: Record<string, unknown> }>(
      "SELECT metadata FROM vulnerability WHERE name = 'GHSA-p6mc-m468-83gw' AND deleted_at IS NULL",
    );
    expect(enriched[0]!.metadata['NVD']).toEqual({ CVSSv3: { ...nvd.CVSSv3, CVE: 'CVE-2020-8203' } });
    expect(enriched[0]!.metadata['OSV']).toBeDefined();
    // A source's first data is not news.
    expect(await notifications(pool)).toEqual([]);

    // Unchanged upstream: every archive answers 304, nothing is written.
    const before = server.requests.length;
    expect(await runner.run(osvSource)).toMatchObject({ status: 'unchanged', changed: 0 });
    expect(server.requests.slice(before).map((r) => r.status)).toEqual(ECOSYSTEMS.map(() => 304));

    // npm's archive loses one record and another changes: only npm is read again, and both are notified.
    const npm = new Map(records.get('npm')!);
    npm.delete('GHSA-35jh-r3h4-6jhm.json');
    const changed = JSON.parse(npm.get('GHSA-29mw-wpgm-hmr9.json')!) as { affected: Array<{ ranges: Array<{ events: object[] }> }> };
    changed.affected[0]!.ranges[0]!.events = [{ introduced: '0' }, { fixed: '4.17.99' }];
    npm.set('GHSA-29mw-wpgm-hmr9.json', JSON.stringify(changed));
    server.put('/osv/npm/all.zip', zipOf(npm));
    const third = await runner.run(osvSource);
    expect(third).toMatchObject({ status: 'updated', changed: 2, records: 46 });
    expect(await notifications(pool)).toEqual(['GHSA-29mw-wpgm-hmr9: changed', 'GHSA-35jh-r3h4-6jhm: withdrawn']);
    expect(await fixes(pool, 'npm', 'GHSA-29mw-wpgm-hmr9')).toEqual([
      'lodash 4.17.99',
      'lodash-es 4.17.21',
      'lodash.trim None',
      'lodash.trimend None',
    ]);
    expect((await liveByNamespace(pool))['pypi']).toEqual(live['pypi']);
  });

  it('writes a large archive in batches, withdraws what it drops across batches, refuses to lose most of it, and exports and imports it in batches', async () => {
    const pool = await freshPool();
    const mirror = mkdtempSync(join(tmpdir(), 'tarsier-osv-mirror-'));
    whenDone(() => rmSync(mirror, { recursive: true, force: true }));
    mkdirSync(join(mirror, 'npm'));
    // One real record under 4,500 ids and package names: more than two batches.
    const model = JSON.parse(fixtureRecords('npm').get('GHSA-vh95-rmgr-6w4m.json')!) as {
      id: string;
      affected: Array<{ package: { name: string } }>;
    };
    const records = (count: number, details?: string) =>
      new Map(
        Array.from({ length: count }, (_, i) => {
          const id = `GHSA-test-${String(i).padStart(4, '0')}`;
          const record = {
            ...model,
            id,
            aliases: [],
            affected: model.affected.map((a) => ({ ...a, package: { ...a.package, name: `pkg-${i}` } })),
            // The first record's details, when given.
            ...(i === 0 && details !== undefined ? { details } : {}),
          };
          return [`${id}.json`, JSON.stringify(record)];
        }),
      );
    const write = (count: number, details?: string) => writeFileSync(join(mirror, 'npm', 'all.zip'), zipOf(records(count, details)));
    const runner = runnerFor(pool, pathToFileURL(`${mirror}/`).href, ['npm']);

    write(4_500);
    expect(await runner.run(osvSource)).toMatchObject({ status: 'updated', records: 4_500, changed: 4_500 });
    write(3_500);
    expect(await runner.run(osvSource)).toMatchObject({ status: 'updated', records: 3_500, changed: 1_000 });
    const live = (await liveByNamespace(pool))['npm']!;
    expect(live).toHaveLength(3_500);
    expect(live.at(-1)).toBe('GHSA-test-3499');
    // An archive that suddenly lacks most of the namespace is broken, not a mass withdrawal.
    write(1_000);
    const refused = await runner.run(osvSource);
    expect(refused.status).toBe('failed');
    expect(refused.error).toBe(
      'the feed lacks 2500 of the 3500 vulnerabilities it had in npm; refusing to delete them (the feed is more likely incomplete)',
    );
    expect((await liveByNamespace(pool))['npm']).toHaveLength(3_500);
    // A batch the database refuses (PostgreSQL's text holds no NUL) fails while the next one is
    // being read: the run fails, saying why, and the process goes on.
    write(3_500, 'details with a NUL: \u0000');
    const refusedBatch = await runner.run(osvSource);
    expect(refusedBatch.status).toBe('failed');
    expect(refusedBatch.error).toMatch(/invalid byte sequence for encoding "UTF8": 0x00/);
    expect((await liveByNamespace(pool))['npm']).toHaveLength(3_500);

    // An offline bundle carries them, read and written a batch at a time on both sides.
    const bundle = join(mirror, 'bundle.gz');
    await exportBundle(pool, SOURCES, bundle);
    const airGapped = await freshPool();
    const summaries = await importBundle(runnerFor(airGapped, 'file:///nowhere/'), SOURCES, bundle);
    expect(summaries.find((s) => s.source === 'osv')).toMatchObject({ status: 'updated', records: 3_500, changed: 3_500 });
    expect(await liveByNamespace(airGapped)).toEqual(await liveByNamespace(pool));
  });

  it('reads a local directory of records (a checkout of an OSV database) for the chosen ecosystems, and names a broken record', async () => {
    const pool = await freshPool();
    const summary = await runnerFor(pool, pathToFileURL(OSV).href, ['Go', 'crates.io']).run(osvSource);
    expect(summary, summary.error).toMatchObject({ status: 'updated' });
    const live = await liveByNamespace(pool);
    expect(Object.keys(live).sort()).toEqual(['crates.io', 'go']);
    expect(live['go']).toEqual(expectedNames('Go', fixtureRecords('Go')));
    expect(live['crates.io']).toEqual(['RUSTSEC-2022-0013']);

    const broken = mkdtempSync(join(tmpdir(), 'tarsier-osv-dir-'));
    whenDone(() => rmSync(broken, { recursive: true, force: true }));
    mkdirSync(join(broken, 'nested'));
    writeFileSync(join(broken, 'nested', 'GO-bad.json'), '{"id": "GO-bad", "affected": {}}');
    const failed = await runnerFor(pool, pathToFileURL(broken).href, ['Go']).run(osvSource);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^nested\/GO-bad\.json: OSV record GO-bad: affected/);
    expect((await liveByNamespace(pool))['go']).toEqual(live['go']);
  });
});

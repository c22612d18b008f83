import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { debianUpdater } from '../../src/ecosystems/debian/updater.js';
import { nvdEnricher } from '../../src/ecosystems/nvd/updater.js';
import { Metrics } from '../../src/metrics.js';
import { exportBundle, importBundle } from '../../src/updater/bundle.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { json, testApp } from '../helpers/app.js';
import { freshPool, silentLog } from '../helpers/db.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { gzip, tarball } from '../helpers/tarball.js';

const FEEDS = fileURLToPath(new URL('../fixtures/feeds/', import.meta.url));
const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const trackerExcerpt = JSON.parse(readFileSync(`${FEEDS}debian/security-tracker-excerpt.json`, 'utf8')) as Record<string, any>;

/** A small tracker document of our own, to change one entry at a time. */
function tracker(entries: Record<string, Record<string, { release: string; status: string; fixed?: string; urgency?: string }[]>>) {
  const doc: Record<string, unknown> = {};
  for (const [pkg, cves] of Object.entries(entries)) {
    doc[pkg] = Object.fromEntries(
      Object.entries(cves).map(([cve, releases]) => [
        cve,
        {
          description: `${cve} in ${pkg}`,
          releases: Object.fromEntries(
            releases.map((r) => [
              r.release,
              { status: r.status, urgency: r.urgency ?? 'low', ...(r.fixed ? { fixed_version: r.fixed } : {}) },
            ]),
          ),
        },
      ]),
    );
  }
  return JSON.stringify(doc);
}

async function runnerFor(pool: pg.Pool, server: FeedServer, metrics = new Metrics()) {
  const config = parseConfig(
    `clair:\n  updater:\n    sources:\n      debian: { url: "${server.url('/tracker/json')}" }\n      nvd: { url: "${server.url('/nvd/')}" }\n`,
  );
  return { runner: new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog, metrics }), metrics };
}

async function vulnerabilities(pool: pg.Pool) {
  const { rows } = await pool.query(`
    SELECT n.name AS namespace, v.name, v.severity, v.description, v.link, v.updater,
           (SELECT json_agg(json_build_array(f.name, fi.fixed_version) ORDER BY f.name)
              FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id WHERE fi.vulnerability_id = v.id) AS fixed
    FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
    WHERE v.deleted_at IS NULL ORDER BY n.name, v.name`);
  return rows;
}

/** Everything a write would move: row counts and the highest ids of the vulnerability tables. */
async function footprint(pool: pg.Pool) {
  const { rows } = await pool.query(`
    SELECT (SELECT count(*) FROM vulnerability)::int AS versions, (SELECT max(id) FROM vulnerability)::int AS last_version,
           (SELECT count(*) FROM vulnerability WHERE deleted_at IS NOT NULL)::int AS superseded,
           (SELECT count(*) FROM vulnerability_fixedin)::int AS fixes, (SELECT count(*) FROM notification)::int AS notifications,
           (SELECT count(*) FROM feature)::int AS features`);
  return rows[0];
}

async function notifications(pool: pg.Pool) {
  const { rows } = await pool.query(`
    SELECT o.name || '@' || (SELECT string_agg(coalesce(fi.fixed_version, 'None'), ',') FROM vulnerability_fixedin fi WHERE fi.vulnerability_id = o.id) AS old,
           n.name || '@' || (SELECT string_agg(coalesce(fi.fixed_version, 'None'), ',') FROM vulnerability_fixedin fi WHERE fi.vulnerability_id = n.id) AS new
    FROM notification x LEFT JOIN vulnerability o ON o.id = x.old_vulnerability_id LEFT JOIN vulnerability n ON n.id = x.new_vulnerability_id
    ORDER BY coalesce(o.name, n.name)`);
  return rows;
}

describe('the Debian source from a local HTTP server', () => {
  it('stores the real excerpt field by field, with no notifications on the first run', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    server.put('/tracker/json', JSON.stringify(trackerExcerpt));
    const { runner } = await runnerFor(pool, server);
    const summary = await runner.run(debianUpdater);
    expect(summary).toMatchObject({ source: 'debian', status: 'updated', records: 21, changed: 21 });
    const stored = await vulnerabilities(pool);
    expect(stored).toHaveLength(21);
    expect(stored.map((v) => v.updater)).toEqual(stored.map(() => 'debian'));
    // Spot checks against the excerpt: every field of a few records.
    const byKey = new Map(stored.map((v) => [`${v.namespace} ${v.name}`, v]));
    for (const [pkg, cves] of Object.entries(trackerExcerpt)) {
      for (const [cve, entry] of Object.entries(cves as Record<string, any>)) {
        const releases = Array.isArray(entry.releases) ? {} : entry.releases;
        for (const [codename, r] of Object.entries(releases as Record<string, any>)) {
          const ns = {
            wheezy: 'debian:7',
            jessie: 'debian:8',
            stretch: 'debian:9',
            buster: 'debian:10',
            bullseye: 'debian:11',
            bookworm: 'debian:12',
            trixie: 'debian:13',
            sid: 'debian:unstable',
          }[codename];
          const v = byKey.get(`${ns} ${cve}`);
          if (r.fixed_version === '0' || r.status === 'undetermined') {
            expect(v?.fixed?.some(([name]: [string]) => name === pkg) ?? false).toBe(false);
            continue;
          }
          expect(v, `${ns} ${cve}`).toBeDefined();
          expect(v.link).toBe(`https://security-tracker.debian.org/tracker/${cve}`);
          expect(v.description).toBe(entry.description ?? '');
          expect(v.fixed).toContainEqual([pkg, r.status === 'open' ? null : r.fixed_version]);
        }
      }
    }
    expect((await footprint(pool)).notifications).toBe(0);
  });

  it('does no database writes when the feed is unchanged (304), and stores nothing from a 500 or garbage', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    server.put('/tracker/json', JSON.stringify(trackerExcerpt));
    const { runner, metrics } = await runnerFor(pool, server);
    await runner.run(debianUpdater);
    const after = await footprint(pool);
    const before = await vulnerabilities(pool);

    const unchanged = await runner.run(debianUpdater);
    expect(unchanged).toMatchObject({ status: 'unchanged', records: 21, changed: 0 });
    expect(server.requests.at(-1)).toMatchObject({ path: '/tracker/json', status: 304 });
    // Feed servers see who asks: tarsier/<version of package.json>.
    expect(server.requests.every((r) => r.headers['user-agent'] === `tarsier/${packageVersion}`)).toBe(true);
    expect(await footprint(pool)).toEqual(after);

    server.fail('/tracker/json');
    const failed = await runner.run(debianUpdater);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/answered 500/);
    expect(await vulnerabilities(pool)).toEqual(before);
    expect(await metrics.registry.getSingleMetricAsString('tarsier_updater_last_run_failed')).toContain(
      'tarsier_updater_last_run_failed{source="debian"} 1',
    );

    server.put('/tracker/json', '{"openssl": {"CVE-2024-1": {"releases": ');
    const garbage = await runner.run(debianUpdater);
    expect(garbage.status).toBe('failed');
    expect(await vulnerabilities(pool)).toEqual(before);
    const { rows } = await pool.query(
      "SELECT last_error, consecutive_failures, next_run_at > now() AS later FROM updater_state WHERE name = 'debian'",
    );
    expect(rows[0]).toMatchObject({ consecutive_failures: 2, later: true });
    expect(rows[0].last_error).toMatch(/./);

    server.put('/tracker/json', JSON.stringify(trackerExcerpt));
    expect((await runner.run(debianUpdater)).status).toBe('unchanged'); // same content as the last good run
    expect(await metrics.registry.getSingleMetricAsString('tarsier_updater_last_run_failed')).toContain('{source="debian"} 0');
  });

  it('notifies exactly the changes of a later run: a new fix, a new CVE, a withdrawn CVE', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    server.put(
      '/tracker/json',
      tracker({
        openssl: {
          'CVE-1': [{ release: 'bookworm', status: 'open' }],
          'CVE-2': [{ release: 'bookworm', status: 'resolved', fixed: '3.0.11-1' }],
        },
        zlib: { 'CVE-3': [{ release: 'bookworm', status: 'open' }] },
      }),
    );
    const { runner } = await runnerFor(pool, server);
    await runner.run(debianUpdater);
    server.put(
      '/tracker/json',
      tracker({
        openssl: {
          'CVE-1': [{ release: 'bookworm', status: 'resolved', fixed: '3.0.13-1' }],
          'CVE-2': [{ release: 'bookworm', status: 'resolved', fixed: '3.0.11-1' }],
        },
        curl: { 'CVE-4': [{ release: 'bookworm', status: 'open', urgency: 'high' }] },
      }),
    );
    const summary = await runner.run(debianUpdater);
    expect(summary).toMatchObject({ status: 'updated', changed: 3, records: 3 });
    expect(await notifications(pool)).toEqual([
      { old: 'CVE-1@None', new: 'CVE-1@3.0.13-1' },
      { old: 'CVE-3@None', new: null },
      { old: null, new: 'CVE-4@None' },
    ]);
  });

  it('a run flagged quiet (the fix-state migration) rewrites states without notifying, and the next change notifies again', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    const doc = (reason: string | undefined) => {
      const release = { status: 'open', urgency: 'low', ...(reason ? { nodsa: 'Minor issue', nodsa_reason: reason } : {}) };
      return JSON.stringify({ openssl: { 'CVE-1': { description: 'CVE-1 in openssl', releases: { bookworm: release } } } });
    };
    server.put('/tracker/json', doc(undefined));
    const { runner } = await runnerFor(pool, server);
    await runner.run(debianUpdater);
    // What migration 0006 does to a source whose parser now gives fix states.
    await pool.query(`UPDATE updater_state SET fingerprint = NULL, quiet_next_run = true WHERE name = 'debian'`);
    server.put('/tracker/json', doc('postponed'));
    expect(await runner.run(debianUpdater)).toMatchObject({ status: 'updated', changed: 1 });
    const states = async () =>
      (
        await pool.query(`SELECT fix_state FROM vulnerability_fixedin fi JOIN vulnerability v ON v.id = fi.vulnerability_id
                          WHERE v.deleted_at IS NULL`)
      ).rows.map((r) => r.fix_state);
    expect(await states()).toEqual(['fix_deferred']);
    expect(await notifications(pool)).toEqual([]);
    expect((await pool.query(`SELECT quiet_next_run FROM updater_state WHERE name = 'debian'`)).rows[0].quiet_next_run).toBe(false);
    // A change of state alone, from upstream, is notified.
    server.put('/tracker/json', doc('ignored'));
    expect(await runner.run(debianUpdater)).toMatchObject({ status: 'updated', changed: 1 });
    expect(await states()).toEqual(['will_not_fix']);
    expect(await notifications(pool)).toEqual([{ old: 'CVE-1@None', new: 'CVE-1@None' }]);
  });

  it('an import flagged quiet (the fix-state migration, on an air-gapped install) writes the new states without notifying', async () => {
    const doc = (reason: string | undefined) => {
      const release = { status: 'open', urgency: 'low', ...(reason ? { nodsa: 'Minor issue', nodsa_reason: reason } : {}) };
      return JSON.stringify({ openssl: { 'CVE-1': { description: 'CVE-1 in openssl', releases: { bookworm: release } } } });
    };
    // Where the bundle is made: the new parser's states.
    const online = await freshPool();
    const upstream = await startFeedServer();
    upstream.put('/tracker/json', doc('postponed'));
    expect(await (await runnerFor(online, upstream)).runner.run(debianUpdater)).toMatchObject({ status: 'updated' });
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-quiet-import-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const bundle = join(dir, 'bundle.jsonl.gz');
    await exportBundle(online, [debianUpdater], bundle);

    // The air-gapped install: data from before the migration, then the migration's flag.
    const offline = await freshPool();
    const mirror = await startFeedServer();
    mirror.put('/tracker/json', doc(undefined));
    const { runner } = await runnerFor(offline, mirror);
    await runner.run(debianUpdater);
    await offline.query(`UPDATE updater_state SET quiet_next_run = true WHERE name = 'debian'`);
    expect(await importBundle(runner, [debianUpdater], bundle)).toEqual([expect.objectContaining({ source: 'debian', changed: 1 })]);
    expect(
      (
        await offline.query(
          `SELECT fi.fix_state FROM vulnerability_fixedin fi JOIN vulnerability v ON v.id = fi.vulnerability_id WHERE v.deleted_at IS NULL`,
        )
      ).rows,
    ).toEqual([{ fix_state: 'fix_deferred' }]);
    expect(await notifications(offline)).toEqual([]);
    expect((await offline.query(`SELECT quiet_next_run FROM updater_state WHERE name = 'debian'`)).rows[0].quiet_next_run).toBe(false);
  });

  it('refuses to delete most of a namespace at once, keeping the data', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    const many = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`CVE-${i}`, [{ release: 'bookworm', status: 'open' }]]));
    server.put('/tracker/json', tracker({ openssl: many }));
    const { runner } = await runnerFor(pool, server);
    await runner.run(debianUpdater);
    server.put('/tracker/json', tracker({ openssl: { 'CVE-0': [{ release: 'bookworm', status: 'open' }] } }));
    const summary = await runner.run(debianUpdater);
    expect(summary.status).toBe('failed');
    expect(summary.error).toMatch(/lacks 149 of the 150 vulnerabilities it had in debian:12; refusing to delete them/);
    expect((await vulnerabilities(pool)).length).toBe(150);
  });

  it('lets API-written vulnerabilities coexist: the feed overwrites its own names and deletes only its own', async () => {
    const t = await testApp();
    const server = await startFeedServer();
    server.put('/tracker/json', tracker({ openssl: { 'CVE-1': [{ release: 'bookworm', status: 'open' }] } }));
    const { runner } = await runnerFor(t.pool, server);
    const url = '/v1/namespaces/debian%3A12/vulnerabilities';
    await t.app.inject({
      method: 'POST',
      url,
      payload: { Vulnerability: { Name: 'CVE-1', Severity: 'Critical', FixedIn: [{ Name: 'openssl', Version: '9.9' }] } },
    });
    await t.app.inject({
      method: 'POST',
      url,
      payload: { Vulnerability: { Name: 'LOCAL-1', Severity: 'High', FixedIn: [{ Name: 'openssl', Version: 'None' }] } },
    });
    await runner.run(debianUpdater);
    const stored = await vulnerabilities(t.pool);
    expect(stored.map((v) => [v.name, v.updater, v.severity])).toEqual([
      ['CVE-1', 'debian', 'Low'],
      ['LOCAL-1', null, 'High'],
    ]);
    server.put('/tracker/json', tracker({ zlib: { 'CVE-9': [{ release: 'bookworm', status: 'open' }] } }));
    await runner.run(debianUpdater);
    expect((await vulnerabilities(t.pool)).map((v) => v.name)).toEqual(['CVE-9', 'LOCAL-1']);
  });
});

describe('end to end', () => {
  it('gives a layer indexed before an update the new vulnerabilities in its report after it', async () => {
    const t = await testApp();
    const blobs = await startFeedServer();
    blobs.put(
      '/layer.tar.gz',
      gzip(
        tarball([
          { path: 'etc/os-release', content: 'ID=debian\nVERSION_ID="12"\n' },
          {
            path: 'var/lib/dpkg/status',
            content:
              'Package: libssl3\nStatus: install ok installed\nSource: openssl\nVersion: 3.0.11-1~deb12u2\n\nPackage: zlib1g\nStatus: install ok installed\nSource: zlib\nVersion: 1:1.2.13.dfsg-1\n',
          },
        ]),
      ),
    );
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/layers',
      payload: { Layer: { Name: 'l', Path: blobs.url('/layer.tar.gz'), Format: 'Docker' } },
    });
    expect(res.statusCode).toBe(201);
    const report = async () =>
      json(await t.app.inject({ url: '/v1/layers/l?vulnerabilities' })).Layer.Features.map(
        (f: { Name: string; Vulnerabilities: Array<{ Name: string; FixedBy?: string; Severity: string }> }) =>
          `${f.Name}: ${f.Vulnerabilities.map((v) => `${v.Name}/${v.Severity}/${v.FixedBy ?? '-'}`).join(' ')}`,
      );
    expect(await report()).toEqual(['openssl: ', 'zlib: ']);

    const feeds = await startFeedServer();
    feeds.put(
      '/tracker/json',
      tracker({
        openssl: { 'CVE-2024-0727': [{ release: 'bookworm', status: 'resolved', fixed: '3.0.13-1~deb12u1', urgency: 'medium' }] },
        zlib: { 'CVE-2023-45853': [{ release: 'bookworm', status: 'open' }] },
      }),
    );
    // NVD knows CVE-2023-45853 (no Debian urgency beyond "low"... here "low") and CVE-2024-0727.
    const nvd = {
      vulnerabilities: [
        {
          cve: {
            id: 'CVE-2024-0727',
            metrics: {
              cvssMetricV31: [
                { type: 'Primary', cvssData: { baseScore: 5.5, vectorString: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H' } },
              ],
            },
          },
        },
      ],
    };
    feeds.put(`/nvd/nvdcve-2.0-2024.json.gz`, gzipSync(JSON.stringify(nvd)));
    const { runner } = await runnerFor(t.pool, feeds);
    expect((await runner.run(debianUpdater)).status).toBe('updated');
    expect((await runner.run(nvdEnricher)).status).toBe('updated');
    expect(await report()).toEqual(['openssl: CVE-2024-0727/Medium/3.0.13-1~deb12u1', 'zlib: CVE-2023-45853/Low/-']);
    const vuln = json(await t.app.inject({ url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2024-0727' })).Vulnerability;
    expect(vuln.Metadata).toEqual({ NVD: { CVSSv3: { Score: 5.5, Vectors: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H' } } });
  });
});

describe('NVD enrichment', () => {
  it('completes the enrichment of a run interrupted after NVD data was stored', async () => {
    const pool = await freshPool();
    const feeds = await startFeedServer();
    feeds.put(
      '/tracker/json',
      tracker({ openssl: { 'CVE-2024-0727': [{ release: 'bookworm', status: 'resolved', fixed: '3.0.13-1~deb12u1' }] } }),
    );
    const cvss = { baseScore: 5.5, vectorString: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H' };
    feeds.put(
      '/nvd/nvdcve-2.0-2024.json.gz',
      gzipSync(
        JSON.stringify({
          vulnerabilities: [{ cve: { id: 'CVE-2024-0727', metrics: { cvssMetricV31: [{ type: 'Primary', cvssData: cvss }] } } }],
        }),
      ),
    );
    const { runner } = await runnerFor(pool, feeds);
    expect((await runner.run(debianUpdater)).status).toBe('updated');
    // An earlier nvd run stored NVD's data and died before re-writing the vulnerabilities.
    const nvd = { CVSSv3: { Score: 5.5, Vectors: cvss.vectorString } };
    await pool.query("INSERT INTO nvd_enrichment (cve, nvd, severity) VALUES ('CVE-2024-0727', $1, 'Medium')", [JSON.stringify(nvd)]);
    expect((await runner.run(nvdEnricher)).status).toBe('updated');
    const { rows } = await pool.query("SELECT metadata FROM vulnerability WHERE name = 'CVE-2024-0727' AND deleted_at IS NULL");
    expect(rows).toEqual([{ metadata: { NVD: nvd } }]);
  });
});

/**
 * An offline bundle carries everything: `tarsier export` of an installation whose data came from an
 * updater (Debian's tracker, served as upstream serves it) and through the v1 API (a record of its
 * own, an edit of an updater's record, a namespace no source feeds), then `tarsier import` into an
 * empty one, must give the same v1 layer reports for the same layers, the same live records with
 * the API's as API records (and the time each was written), and the same data times per namespace.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { coverageOf } from '../../src/coverage.js';
import { parseConfig } from '../../src/config.js';
import { exportBundle, importBundle } from '../../src/updater/bundle.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { enabledSources, SOURCES } from '../../src/updater/sources.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { silentLog } from '../helpers/db.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { alpineLayer, debianLayerTar } from '../helpers/image-archives.js';
import { gzip } from '../helpers/tarball.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';

/** Debian's security tracker JSON, as upstream serves it: buster entries for the test layer's postgresql-11. */
const TRACKER = {
  'postgresql-11': {
    'CVE-2099-7001': {
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
    'CVE-2099-7002': {
      description: 'another flaw in postgresql-11',
      releases: { buster: { status: 'open', repositories: { buster: '11.22-0+deb10u2' }, urgency: 'low' } },
    },
  },
};

const LAYERS = { debian: gzip(debianLayerTar(10)), alpine: alpineLayer('3.18') };

/** The v1 report of each test layer (indexed here first), with its vulnerabilities. */
async function reports(t: TestApp, feeds: FeedServer): Promise<Record<string, unknown>> {
  const found: Record<string, unknown> = {};
  for (const name of Object.keys(LAYERS)) {
    const posted = await t.app.inject({
      method: 'POST',
      url: '/v1/layers',
      payload: { Layer: { Name: name, Path: feeds.url(`/layers/${name}.tar.gz`), Format: 'Docker' } },
    });
    expect(posted.statusCode, posted.body).toBe(201);
    const report = await t.app.inject({ url: `/v1/layers/${name}?features&vulnerabilities` });
    expect(report.statusCode, report.body).toBe(200);
    found[name] = json(report);
  }
  return found;
}

/** Every live record: namespace, name, writer (null: the API), what it says, its fixes, and when an API record was written. */
async function records(pool: pg.Pool): Promise<unknown[]> {
  const { rows } = await pool.query(`
    SELECT n.name AS namespace, v.name, v.updater, v.severity, v.description, v.link, v.metadata, v.cves,
           CASE WHEN v.updater IS NULL THEN v.created_at END AS written_at,
           (SELECT json_agg(json_build_object('feature', f.name, 'version', fi.fixed_version, 'state', fi.fix_state) ORDER BY f.name)
              FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id WHERE fi.vulnerability_id = v.id) AS fixes
    FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
    WHERE v.deleted_at IS NULL ORDER BY n.name, v.name`);
  return rows;
}

describe('an export → import round trip', () => {
  let online: TestApp;
  let feeds: FeedServer;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tarsier-round-trip-'));
    feeds = await startFeedServer();
    feeds.put('/tracker/json', JSON.stringify(TRACKER));
    for (const [name, bytes] of Object.entries(LAYERS)) feeds.put(`/layers/${name}.tar.gz`, bytes);
    online = await testApp();
    const config = parseConfig(`clair:\n  updater:\n    sources:\n      debian: { url: "${feeds.url('/tracker/json')}" }\n`);
    const runner = new UpdaterRunner({ pool: online.pool, settings: runnerSettings(config), log: silentLog });
    expect(await runner.run(enabledSources(['debian'])[0]!)).toMatchObject({ status: 'updated', records: 2 });
    // Through the API: a record of its own beside the updater's, ...
    await addVulnerability(online, 'debian:10', {
      Name: 'CVE-2099-7101',
      Severity: 'Critical',
      Metadata: { NVD: { CVSSv3: { Score: 9.8, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' } } },
      FixedIn: [{ Name: 'postgresql-common', Version: '200+deb10u6' }],
    });
    // ... an edit of the updater's record (now the API's: the updater no longer owns it) ...
    const edited = await online.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A10/vulnerabilities/CVE-2099-7002',
      payload: { Vulnerability: { Name: 'CVE-2099-7002', NamespaceName: 'debian:10', Severity: 'Medium', Description: 'triaged by hand' } },
    });
    expect(edited.statusCode, edited.body).toBe(200);
    // ... and a namespace no enabled source feeds.
    await addVulnerability(online, 'alpine:v3.18', {
      Name: 'CVE-2099-7201',
      Severity: 'High',
      FixedIn: [{ Name: 'openssl', Version: 'None' }],
    });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('keeps the vulnerabilities written through the API and gives the same reports', async () => {
    const before = await reports(online, feeds);
    // Each layer is affected by what was written both ways.
    const names = (report: any) =>
      report.Layer.Features.flatMap((f: any) => (f.Vulnerabilities ?? []).map((v: any) => `${f.Name} ${v.Name} ${v.Severity}`)).sort();
    expect(names(before.debian)).toEqual([
      'postgresql-11 CVE-2099-7001 High',
      'postgresql-11 CVE-2099-7002 Medium',
      'postgresql-common CVE-2099-7101 Critical',
    ]);
    expect(names(before.alpine)).toEqual(['openssl CVE-2099-7201 High']);

    const bundle = join(dir, 'bundle.jsonl.gz');
    await exportBundle(online.pool, SOURCES, bundle);
    const airGapped = await testApp();
    const runner = new UpdaterRunner({ pool: airGapped.pool, settings: runnerSettings(parseConfig('')), log: silentLog });
    const summaries = await importBundle(runner, SOURCES, bundle);
    expect(summaries.map((s) => [s.source, s.status, s.records])).toEqual([
      ['debian', 'updated', 1],
      ['api', 'updated', 3],
    ]);
    expect(await records(airGapped.pool)).toEqual(await records(online.pool));
    expect(await reports(airGapped, feeds)).toEqual(before);
    // The data is as old as it was where it came from: the source's last update, the API's last writes.
    const namespaces = ['debian:10', 'alpine:v3.18'];
    expect(await coverageOf(airGapped.pool, namespaces)).toEqual(await coverageOf(online.pool, namespaces));

    // The same bundle again changes nothing and notifies nothing.
    const notifications = async () => (await airGapped.pool.query('SELECT count(*)::int AS n FROM notification')).rows[0].n;
    const quiet = await notifications();
    expect((await importBundle(runner, SOURCES, bundle)).map((s) => [s.source, s.status])).toEqual([
      ['debian', 'unchanged'],
      ['api', 'unchanged'],
    ]);
    expect(await notifications()).toBe(quiet);
  });
});

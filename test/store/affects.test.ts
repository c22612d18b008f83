import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MATCHING } from '../../src/ecosystems/matching.js';
import { recordsWrittenBy } from '../../src/store/exports.js';
import { ensureFeatureVersions, featuresOfNamespace, lockNamespace, relinkFeatures } from '../../src/store/features.js';
import { withTransaction } from '../../src/store/pool.js';
import { applyNamespaceUpdate, liveVulnerabilities } from '../../src/store/updates.js';
import { ensureNamespace } from '../../src/store/vulnerabilities.js';
import { testApp } from '../helpers/app.js';

/** Installed versions, as the indexer will record them, written straight into the store. */
async function installed(pool: pg.Pool, namespace: string, format: string, feature: string, versions: string[]) {
  await pool.query('INSERT INTO namespace (name, version_format) VALUES ($1, $2) ON CONFLICT DO NOTHING', [namespace, format]);
  await pool.query(`INSERT INTO feature (namespace_id, name) SELECT id, $2 FROM namespace WHERE name = $1 ON CONFLICT DO NOTHING`, [
    namespace,
    feature,
  ]);
  await pool.query(
    `INSERT INTO feature_version (feature_id, version)
     SELECT f.id, unnest($3::text[]) FROM feature f JOIN namespace n ON n.id = f.namespace_id WHERE n.name = $1 AND f.name = $2`,
    [namespace, feature, versions],
  );
}

async function affected(pool: pg.Pool, vulnerability: string): Promise<string[]> {
  const { rows } = await pool.query<{ version: string }>(
    `SELECT fv.version FROM vulnerability_affects a
     JOIN vulnerability v ON v.id = a.vulnerability_id AND v.deleted_at IS NULL
     JOIN feature_version fv ON fv.id = a.feature_version_id
     WHERE v.name = $1 ORDER BY fv.id`,
    [vulnerability],
  );
  return rows.map((r) => r.version);
}

describe('the affects relation, from the vulnerability side', () => {
  it("links exactly the installed versions below the fix, under each namespace's own ordering", async () => {
    const t = await testApp();
    await installed(t.pool, 'debian:12', 'dpkg', 'openssl', ['3.0.11-1~deb12u1', '3.0.11-1~deb12u2', '3.0.11-1', '1:1.0', '3.0.9-1+b1']);
    await installed(t.pool, 'rhel:9', 'rpm', 'openssl', ['1:3.0.7-24.el9', '1:3.0.7-25.el9_3', '3.0.7-30.el9', '1:3.0.7-25.el9_3^1']);
    await installed(t.pool, 'alpine:v3.19', 'apk', 'openssl', ['3.1.4-r1', '3.1.4-r5', '3.1.4_pre1-r9', '3.1.10-r0', '3.1.04-r0']);
    const post = (ns: string, name: string, version: string) =>
      t.app.inject({
        method: 'POST',
        url: `/v1/namespaces/${encodeURIComponent(ns)}/vulnerabilities`,
        payload: { Vulnerability: { Name: name, Severity: 'High', FixedIn: [{ Name: 'openssl', Version: version }] } },
      });

    expect((await post('debian:12', 'DSA-1', '3.0.11-1~deb12u2')).statusCode).toBe(201);
    // dpkg: ~ sorts before the end, +b1 after; epoch 1 beats any epoch-0 version.
    expect(await affected(t.pool, 'DSA-1')).toEqual(['3.0.11-1~deb12u1', '3.0.9-1+b1']);

    expect((await post('rhel:9', 'RHSA-1', '1:3.0.7-25.el9_3')).statusCode).toBe(201);
    // rpm: a missing epoch is 0, so 3.0.7-30.el9 < 1:3.0.7-...; ^ sorts after the release.
    expect(await affected(t.pool, 'RHSA-1')).toEqual(['1:3.0.7-24.el9', '3.0.7-30.el9']);

    expect((await post('alpine:v3.19', 'CVE-APK-1', '3.1.4-r5')).statusCode).toBe(201);
    // apk: _pre sorts before the release; 3.1.10 > 3.1.4 numerically; 3.1.04 is a fraction (< 3.1.4).
    expect(await affected(t.pool, 'CVE-APK-1')).toEqual(['3.1.4-r1', '3.1.4_pre1-r9', '3.1.04-r0']);
  });

  it('links every installed version when there is no fix yet, and follows a changed fix', async () => {
    const t = await testApp();
    await installed(t.pool, 'debian:12', 'dpkg', 'zlib', ['1:1.2.13.dfsg-1', '1:1.3.dfsg-3']);
    const url = '/v1/namespaces/debian%3A12/vulnerabilities';
    await t.app.inject({
      method: 'POST',
      url,
      payload: { Vulnerability: { Name: 'CVE-Z', FixedIn: [{ Name: 'zlib', Version: 'None' }] } },
    });
    expect(await affected(t.pool, 'CVE-Z')).toEqual(['1:1.2.13.dfsg-1', '1:1.3.dfsg-3']);
    await t.app.inject({ method: 'PUT', url: `${url}/CVE-Z/fixes/zlib`, payload: { Feature: { Version: '1:1.3.dfsg-1' } } });
    expect(await affected(t.pool, 'CVE-Z')).toEqual(['1:1.2.13.dfsg-1']);
    await t.app.inject({ method: 'DELETE', url: `${url}/CVE-Z/fixes/zlib` });
    expect(await affected(t.pool, 'CVE-Z')).toEqual([]);
    // The superseded versions keep their own links, for the Old side of notifications.
    const { rows } = await t.pool.query('SELECT count(*)::int AS n FROM vulnerability_affects');
    expect(rows[0].n).toBe(3);
  });

  it('does not link versions of a feature with the same name in another namespace', async () => {
    const t = await testApp();
    await installed(t.pool, 'debian:11', 'dpkg', 'curl', ['7.74.0-1.3+deb11u1']);
    await installed(t.pool, 'debian:12', 'dpkg', 'curl', ['7.88.1-10']);
    await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/debian%3A12/vulnerabilities',
      payload: { Vulnerability: { Name: 'CVE-C', FixedIn: [{ Name: 'curl', Version: '7.88.1-10+deb12u5' }] } },
    });
    expect(await affected(t.pool, 'CVE-C')).toEqual(['7.88.1-10']);
  });
});

describe('the affects relation, for several entries of one package', () => {
  /** Each linked installed version ("version [arches]") with the fix its link names (FixedBy). */
  async function decided(pool: pg.Pool, vulnerability: string): Promise<Record<string, string | null>> {
    const { rows } = await pool.query<{ name: string; version: string; arches: string[]; fixed: string | null }>(
      `SELECT f.name, fv.version, fv.arches, fi.fixed_version AS fixed FROM vulnerability_affects a
       JOIN vulnerability v ON v.id = a.vulnerability_id AND v.deleted_at IS NULL
       JOIN feature_version fv ON fv.id = a.feature_version_id JOIN feature f ON f.id = fv.feature_id
       JOIN vulnerability_fixedin fi ON fi.id = a.fixedin_id
       WHERE v.name = $1`,
      [vulnerability],
    );
    return Object.fromEntries(rows.map((r) => [`${r.name} ${r.version} [${r.arches.join(',')}]`, r.fixed]));
  }

  it('links each installed version by the entry that decides, the same through updater, API and recomputed writes', async () => {
    const t = await testApp();
    const namespace = await withTransaction(t.pool, (c) => ensureNamespace(c, 'rhel:9', 'rpm'));
    await withTransaction(t.pool, (c) =>
      ensureFeatureVersions(
        c,
        namespace,
        [
          { name: 'git', version: '2-4', arches: ['x86_64'] },
          { name: 'git', version: '2-4', arches: ['s390x'] },
          { name: 'git', version: '2-2', arches: ['i686', 'x86_64'] },
          // Indexed before architectures were recorded: every entry applies.
          { name: 'git', version: '2-2' },
          { name: 'bind', version: '9-1' },
          { name: 'bind', version: '9-2' },
          { name: 'zz', version: '1-3' },
          // Two ranges, as OSV gives minimist's: [0, 0.2.1) and [1.0.0, 1.2.2).
          { name: 'mm', version: '0.1-1' },
          { name: 'mm', version: '0.2.1-1' },
          { name: 'mm', version: '0.9-1' },
          { name: 'mm', version: '1.0.0-1' },
          { name: 'mm', version: '1.2.2-1' },
        ],
        MATCHING,
      ),
    );
    const record = {
      namespace: 'rhel:9',
      name: 'RHSA-2099:0001',
      description: '',
      link: '',
      severity: 'High' as const,
      metadata: null,
      sourceSeverity: 'High' as const,
      fixedIn: [
        { feature: 'git', version: '0:2-3', arches: ['x86_64'] },
        { feature: 'git', version: '0:2-5', arches: ['s390x'] },
        { feature: 'bind', version: null, affectedThrough: '9-1' },
        { feature: 'zz', version: '1-2' },
        { feature: 'zz', version: '1-4', affectedAbove: '1-1' },
        { feature: 'mm', version: '0.2.1-1' },
        { feature: 'mm', version: '1.2.2-1', affectedFrom: '1.0.0-1' },
      ],
    };
    await withTransaction(t.pool, async (c) => {
      await lockNamespace(c, namespace.id);
      const live = await liveVulnerabilities(c, namespace);
      await applyNamespaceUpdate(
        c,
        { namespace, desired: [record], updater: 'rhel', notify: false, withdrawMissing: false, matching: MATCHING },
        live,
      );
    });
    const expected = {
      'git 2-4 [s390x]': '0:2-5',
      'git 2-2 [i686,x86_64]': '0:2-3',
      'git 2-2 []': '0:2-5',
      'bind 9-1 []': null,
      'zz 1-3 []': '1-4',
      'mm 0.1-1 []': '0.2.1-1',
      'mm 1.0.0-1 []': '1.2.2-1',
    };
    expect(await decided(t.pool, 'RHSA-2099:0001')).toEqual(expected);
    // Exported as stored: the conditions travel with the entries.
    expect((await recordsWrittenBy(t.pool, 'rhel', 'rhel:9').next()).value?.vulnerability.fixedIn).toEqual(
      expect.arrayContaining([
        { feature: 'git', version: '0:2-5', arches: ['s390x'] },
        { feature: 'bind', version: null, affectedThrough: '9-1' },
        { feature: 'zz', version: '1-4', affectedAbove: '1-1' },
        { feature: 'mm', version: '1.2.2-1', affectedFrom: '1.0.0-1' },
      ]),
    );

    // An edit of another package through the API keeps git's entries, and relinks them the same way.
    const put = await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/rhel%3A9/vulnerabilities/RHSA-2099:0001/fixes/bind',
      payload: { Feature: { Version: '9-5' } },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(await decided(t.pool, 'RHSA-2099:0001')).toEqual({ ...expected, 'bind 9-1 []': '9-5', 'bind 9-2 []': '9-5' });
    // Computed again from scratch (src/rematch.ts), nothing changes.
    const features = await featuresOfNamespace(t.pool, namespace.id);
    expect(await withTransaction(t.pool, (c) => relinkFeatures(c, namespace.id, features, MATCHING.match('rpm')))).toEqual({
      added: 0,
      removed: 0,
    });
  });
});

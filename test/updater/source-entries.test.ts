/**
 * Red Hat's CSAF VEX documents name packages without a fix by their source rpm (CVE-2025-1215:
 * `red_hat_enterprise_linux_9:vim`, `pkg:rpm/redhat/vim?arch=src`), while images install the
 * binaries built from it: vim-minimal, vim-enhanced, vim-common, vim-filesystem. Those are reported,
 * each with the entry's state, whichever was stored first (the layer or the record), for RHEL and
 * its rebuilds alike; gawk, built from the source gawk, once.
 *
 * The documents are Red Hat's own (test/fixtures/feeds/redhat/csaf-vex, unedited), served in
 * Red Hat's layout and read by the rhel-vex updater. The rpm databases: RHEL 9's vim and gawk
 * packages as RHEL 9.2 ships them (name, epoch, version, release, arch and SOURCERPM as `rpm -qa`
 * lists them), written as an ndb database; and a real Amazon Linux 2023 database (sqlite) whose
 * gawk is built from gawk and libuuid, libblkid, libmount and libsmartcols from util-linux.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { MATCHING } from '../../src/ecosystems/matching.js';
import { featuresOfNamespace, relinkFeatures } from '../../src/store/features.js';
import { withTransaction } from '../../src/store/pool.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { layerTar } from '../helpers/image-archives.js';
import { ndbDatabase, rpmHeader } from '../helpers/rpmdb.js';
import { runVexUpdater } from '../helpers/rhel-vex-feed.js';
import { indexLayer } from '../helpers/source-runs.js';

const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));

const DOCUMENTS: Record<string, Buffer> = {
  '2023/cve-2023-4156.json': fixture('feeds/redhat/csaf-vex/cve-2023-4156.json'),
  '2025/cve-2025-1215.json': fixture('feeds/redhat/csaf-vex/cve-2025-1215.json'),
};

const VIM_BINARIES = ['vim-common', 'vim-enhanced', 'vim-filesystem', 'vim-minimal'];

/** RHEL 9.2's vim binaries (epoch 2) and gawk, each with the source rpm it was built from. */
const RHEL9_PACKAGES = ndbDatabase([
  ...VIM_BINARIES.map((name) =>
    rpmHeader({
      name,
      epoch: 2,
      version: '8.2.2637',
      release: '20.el9_1',
      arch: name === 'vim-filesystem' ? 'noarch' : 'x86_64',
      sourceRpm: 'vim-8.2.2637-20.el9_1.src.rpm',
    }),
  ),
  rpmHeader({ name: 'gawk', version: '5.1.0', release: '6.el9', arch: 'x86_64', sourceRpm: 'gawk-5.1.0-6.el9.src.rpm' }),
]);

const layer = (osRelease: string, database: Record<string, Buffer>): Buffer =>
  layerTar({ 'etc/os-release': fixture(`osrelease/${osRelease}/etc/os-release`), ...database });

interface Feature {
  Name: string;
  NamespaceName: string;
  Version: string;
  Vulnerabilities?: Array<{ Name: string; NamespaceName: string; FixedBy?: string; Metadata?: { FixStates?: Record<string, string> } }>;
}

describe('entries naming a source rpm match the binaries built from it', () => {
  let t: TestApp;
  let feed: FeedServer;

  const features = async (name: string): Promise<Feature[]> => {
    const res = await t.app.inject({ url: `/v1/layers/${name}?features&vulnerabilities` });
    expect(res.statusCode, res.body).toBe(200);
    return json(res).Layer.Features as Feature[];
  };
  /** Each affected package with its vulnerabilities: [package, CVE, namespace, FixedBy, its stated fix state]. */
  const findings = (list: Feature[]) =>
    list
      .flatMap((f) =>
        (f.Vulnerabilities ?? []).map((v) => [f.Name, v.Name, v.NamespaceName, v.FixedBy ?? null, v.Metadata?.FixStates?.[f.Name] ?? null]),
      )
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])));

  const VIM_AND_GAWK = [
    ['gawk', 'CVE-2023-4156', 'rhel:9', null, 'will_not_fix'],
    ...VIM_BINARIES.map((name) => [name, 'CVE-2025-1215', 'rhel:9', null, 'fix_deferred']),
  ];

  beforeAll(async () => {
    t = await testApp();
    feed = await startFeedServer();
    // Indexed before the records exist: the updater's write links them.
    await indexLayer(t, feed, 'rhel9-vim-first', layer('rhel-9', { 'var/lib/rpm/Packages.db': RHEL9_PACKAGES }));
    await runVexUpdater(t.pool, feed, DOCUMENTS);
  });

  it('v1: vim-minimal, vim-enhanced, vim-common and vim-filesystem have CVE-2025-1215, fix deferred; gawk has CVE-2023-4156 once', async () => {
    // The record written after the layer (the updater's links) …
    expect(findings(await features('rhel9-vim-first'))).toEqual(VIM_AND_GAWK);
    // … and a layer indexed after the record (the new package versions' links): the same.
    await indexLayer(t, feed, 'rhel9-vim-after', layer('rhel-9.4', { 'usr/lib/sysimage/rpm/Packages.db': RHEL9_PACKAGES }));
    expect(findings(await features('rhel9-vim-after'))).toEqual(VIM_AND_GAWK);
  });

  it('a rebuild matched against Red Hat’s data (Rocky Linux 9) gets the same findings', async () => {
    await indexLayer(t, feed, 'rocky9-vim', layer('rocky-9.3', { 'var/lib/rpm/Packages.db': RHEL9_PACKAGES }));
    const list = await features('rocky9-vim');
    expect(list.find((f) => f.Name === 'vim-minimal')!.NamespaceName).toBe('rhel:9');
    expect(findings(list)).toEqual(VIM_AND_GAWK);
  });

  it('a real rpm database: gawk once; the util-linux and other binaries get nothing from the vim and gawk records', async () => {
    await indexLayer(
      t,
      feed,
      'rhel9-amazon-db',
      layer('rhel-9', { 'var/lib/rpm/rpmdb.sqlite': fixture('rpm/amazonlinux2023-sqlite/rpmdb.sqlite') }),
    );
    expect(findings(await features('rhel9-amazon-db'))).toEqual([['gawk', 'CVE-2023-4156', 'rhel:9', null, 'will_not_fix']]);
  });

  it("a write through the API keeps the entry naming the source, and its links (another package's fix added)", async () => {
    const put = await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/rhel%3A9/vulnerabilities/CVE-2025-1215/fixes/xxd',
      payload: { Feature: { Version: '2:8.2.2637-21.el9' } },
    });
    expect(put.statusCode, put.body).toBeLessThan(300);
    expect(findings(await features('rhel9-vim-after'))).toEqual(VIM_AND_GAWK);
  });

  it('recomputing the matches (rematch) keeps the links by source, and restores them when missing', async () => {
    const namespace = (await t.pool.query<{ id: number }>("SELECT id FROM namespace WHERE name = 'rhel:9'")).rows[0]!.id;
    const countLinks = async () =>
      Number(
        (
          await t.pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM vulnerability_affects a JOIN feature_version fv ON fv.id = a.feature_version_id
             JOIN feature f ON f.id = fv.feature_id
             JOIN vulnerability v ON v.id = a.vulnerability_id AND v.deleted_at IS NULL WHERE f.name LIKE 'vim-%'`,
          )
        ).rows[0]!.n,
      );
    expect(await countLinks()).toBe(4);
    await t.pool.query(
      `DELETE FROM vulnerability_affects a USING feature_version fv, feature f
       WHERE fv.id = a.feature_version_id AND f.id = fv.feature_id AND f.name = 'vim-minimal'`,
    );
    expect(await countLinks()).toBe(3);
    // One feature per transaction: the source's feature (vim) and its binaries' are relinked apart.
    const match = MATCHING.match('rpm');
    const total = { added: 0, removed: 0 };
    for (const feature of await featuresOfNamespace(t.pool, namespace)) {
      const counts = await withTransaction(t.pool, (client) => relinkFeatures(client, namespace, [feature], match));
      total.added += counts.added;
      total.removed += counts.removed;
    }
    expect(total).toEqual({ added: 1, removed: 0 });
    expect(await countLinks()).toBe(4);
    expect(findings(await features('rhel9-vim-after'))).toEqual(VIM_AND_GAWK);
  });
});

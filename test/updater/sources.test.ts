import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { SOURCES } from '../../src/updater/sources.js';
import { freshPool, silentLog } from '../helpers/db.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { compressWith } from '../helpers/tarball.js';

/**
 * Every source, served in its upstream layout from a local HTTP server (real-format excerpts from
 * test/fixtures/feeds), run through the updater; stored records checked field by field. The
 * expected values were read by hand from the fixture files.
 */
const FEEDS = fileURLToPath(new URL('../fixtures/feeds/', import.meta.url));
const fixture = (path: string) => readFileSync(`${FEEDS}${path}`);

interface Expected {
  namespace: string;
  name: string;
  severity: string;
  link: string;
  fixes: Array<[string, string | null]>;
}

const cases: Array<{ source: string; base: string; serve: (s: FeedServer) => void; records: number; expected: Expected[] }> = [
  {
    source: 'alpine',
    base: '/alpine/',
    serve: (s) => {
      s.put(
        '/alpine/',
        '<html><a href="../">../</a><a href="v3.10/">v3.10/</a><a href="v3.15/">v3.15/</a><a href="last-update">last-update</a></html>',
      );
      s.put('/alpine/v3.10/community.json', fixture('alpine/secdb-v3.10-community.json'));
      s.put('/alpine/v3.15/main.json', fixture('alpine/secdb-v3.15-main-excerpt.json'));
    },
    records: 13,
    expected: [
      {
        namespace: 'alpine:v3.15',
        name: 'CVE-2016-0634',
        severity: 'Unknown',
        link: 'https://security.alpinelinux.org/vuln/CVE-2016-0634',
        fixes: [['bash', '4.4.12-r1']],
      },
    ],
  },
  {
    source: 'wolfi',
    base: '/wolfi/security.json',
    serve: (s) => s.put('/wolfi/security.json', fixture('wolfi/security-excerpt.json')),
    records: 53,
    expected: [
      {
        namespace: 'wolfi:rolling',
        name: 'CVE-2022-38126',
        severity: 'Unknown',
        link: 'https://images.chainguard.dev/security/CVE-2022-38126',
        fixes: [['binutils', '2.39-r1']],
      },
    ],
  },
  {
    source: 'ubuntu',
    base: '/ubuntu/',
    serve: (s) =>
      s.put('/ubuntu/com.ubuntu.xenial.cve.oval.xml.bz2', compressWith('bzip2', fixture('ubuntu/com.ubuntu.xenial.cve.oval-excerpt.xml'))),
    records: 1,
    expected: [
      {
        namespace: 'ubuntu:16.04',
        name: 'CVE-2015-4471',
        severity: 'Medium',
        link: 'https://cve.mitre.org/cgi-bin/cvename.cgi?name=CVE-2015-4471',
        fixes: [
          ['cabextract', null],
          ['libmspack', '0.4-3'],
        ],
      },
    ],
  },
  {
    source: 'rhel',
    base: '/rhel/',
    serve: (s) =>
      s.put(
        '/rhel/RHEL8/rhel-8-including-unpatched.oval.xml.bz2',
        compressWith('bzip2', fixture('redhat/oval-v2/rhel-8-rpm-unpatched-excerpt.xml')),
      ),
    records: 1,
    expected: [
      {
        namespace: 'rhel:8',
        name: 'CVE-2021-35937',
        severity: 'Medium',
        link: 'https://access.redhat.com/security/cve/CVE-2021-35937',
        fixes: [
          ['python3-rpm', null],
          ['rpm', null],
          ['rpm-apidocs', null],
          ['rpm-build', null],
          ['rpm-build-libs', null],
          ['rpm-cron', null],
          ['rpm-debugsource', null],
          ['rpm-devel', null],
          ['rpm-libs', null],
          ['rpm-plugin-fapolicyd', null],
          ['rpm-plugin-ima', null],
          ['rpm-plugin-prioreset', null],
          ['rpm-plugin-selinux', null],
          ['rpm-plugin-syslog', null],
          ['rpm-plugin-systemd-inhibit', null],
          ['rpm-sign', null],
        ],
      },
    ],
  },
  {
    source: 'oracle',
    base: '/oracle/',
    serve: (s) => s.put('/oracle/com.oracle.elsa-all.xml.bz2', compressWith('bzip2', fixture('oracle/com.oracle.elsa-ol7-excerpt.xml'))),
    records: 1,
    expected: [
      {
        namespace: 'oracle:7',
        name: 'ELSA-2015-1193',
        severity: 'Medium',
        link: 'http://linux.oracle.com/errata/ELSA-2015-1193.html',
        fixes: [
          ['xerces-c', '0:3.1.1-7.el7_1'],
          ['xerces-c-devel', '0:3.1.1-7.el7_1'],
          ['xerces-c-doc', '0:3.1.1-7.el7_1'],
        ],
      },
    ],
  },
  {
    source: 'amzn',
    base: '/amzn/',
    serve: (s) => {
      s.put('/amzn/2/core/latest/x86_64/mirror.list', `${s.url('/amzn/mirror2/')}\n`);
      s.put('/amzn/mirror2/repodata/repomd.xml', fixture('amazon/repomd.xml'));
      s.put('/amzn/mirror2/repodata/updateinfo.xml.gz', gzipSync(fixture('amazon/alas2-updateinfo-excerpt.xml')));
      s.put('/amzn/al2023/core/mirrors/latest/x86_64/mirror.list', `# mirrors\n${s.url('/amzn/mirror2023/')}\n`);
      s.put('/amzn/mirror2023/repodata/repomd.xml', fixture('amazon/repomd.xml'));
      s.put('/amzn/mirror2023/repodata/updateinfo.xml.gz', gzipSync('<?xml version="1.0"?>\n<updates></updates>\n'));
    },
    records: 2,
    expected: [
      {
        namespace: 'amzn:2',
        name: 'ALAS2-2018-942',
        severity: 'High',
        link: 'https://alas.aws.amazon.com/AL2/ALAS-2018-942.html',
        fixes: [
          ['qemu-img', '10:1.5.3-141.amzn2.5.3'],
          ['qemu-kvm', '10:1.5.3-141.amzn2.5.3'],
          ['qemu-kvm-common', '10:1.5.3-141.amzn2.5.3'],
          ['qemu-kvm-debuginfo', '10:1.5.3-141.amzn2.5.3'],
          ['qemu-kvm-tools', '10:1.5.3-141.amzn2.5.3'],
        ],
      },
    ],
  },
];

async function stored(pool: pg.Pool, namespace: string, name: string) {
  const { rows } = await pool.query(
    `SELECT n.name AS namespace, v.name, v.severity, v.link,
            (SELECT json_agg(json_build_array(f.name, fi.fixed_version) ORDER BY f.name)
               FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id WHERE fi.vulnerability_id = v.id) AS fixes
     FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
     WHERE v.deleted_at IS NULL AND n.name = $1 AND v.name = $2`,
    [namespace, name],
  );
  return rows[0];
}

describe.each(cases)('the $source source', (c) => {
  it('stores the upstream excerpt, and a second run over unchanged files writes nothing', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    c.serve(server);
    const config = parseConfig(`clair:\n  updater:\n    sources:\n      ${c.source}: { url: "${server.url(c.base)}" }\n`);
    const runner = new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog });
    const source = SOURCES.find((s) => s.name === c.source)!;
    const first = await runner.run(source);
    expect(first.error).toBeUndefined();
    expect(first).toMatchObject({ status: 'updated', records: c.records });
    for (const e of c.expected) expect(await stored(pool, e.namespace, e.name)).toEqual(e);
    const versions = (await pool.query('SELECT count(*)::int AS n FROM vulnerability')).rows[0].n;
    expect(await runner.run(source)).toMatchObject({ status: 'unchanged', changed: 0, records: c.records });
    expect((await pool.query('SELECT count(*)::int AS n FROM vulnerability')).rows[0].n).toBe(versions);
  });
});

describe('the nvd source', () => {
  it('stores CVSS data from a yearly feed and only downloads changed years again', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    server.put('/nvd/nvdcve-2.0-2016.json.gz', gzipSync(fixture('nvd/nvd-cve-2.0-feed-excerpt.json')));
    const config = parseConfig(`clair:\n  updater:\n    sources:\n      nvd: { url: "${server.url('/nvd/')}" }\n`);
    const runner = new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog });
    const nvd = SOURCES.find((s) => s.name === 'nvd')!;
    expect(await runner.run(nvd)).toMatchObject({ status: 'updated', records: 2 });
    const { rows } = await pool.query("SELECT nvd, severity FROM nvd_enrichment WHERE cve = 'CVE-2016-2781'");
    expect(rows[0]).toEqual({
      nvd: {
        CVSSv3: { Score: 6.5, Vectors: 'CVSS:3.0/AV:L/AC:L/PR:L/UI:N/S:C/C:N/I:H/A:N' },
        CVSSv2: { Score: 2.1, Vectors: 'AV:L/AC:L/Au:N/C:N/I:P/A:N' },
      },
      severity: 'Medium',
    });
    const before = server.requests.filter((r) => r.status === 200).length;
    expect(await runner.run(nvd)).toMatchObject({ status: 'unchanged' });
    expect(server.requests.filter((r) => r.status === 200).length).toBe(before);
  });

  it('says the feed is corrupt when a gzip file is, and keeps the data it had', async () => {
    const pool = await freshPool();
    const server = await startFeedServer();
    const corrupt = gzipSync(fixture('nvd/nvd-cve-2.0-feed-excerpt.json'));
    corrupt.fill(0x41, 20, 60);
    server.put('/nvd/nvdcve-2.0-2016.json.gz', corrupt);
    const config = parseConfig(`clair:\n  updater:\n    sources:\n      nvd: { url: "${server.url('/nvd/')}" }\n`);
    const runner = new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog });
    const summary = await runner.run(SOURCES.find((s) => s.name === 'nvd')!);
    expect(summary.status).toBe('failed');
    expect(summary.error).toMatch(/the feed is corrupt: gzip data is corrupt or truncated: /);
    expect((await pool.query('SELECT count(*)::int AS n FROM nvd_enrichment')).rows[0].n).toBe(0);
  });
});

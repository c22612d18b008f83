import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INDEXER_VERSION } from '../../../src/ecosystems/index.js';
import { ReportCache } from '../../../src/reports/report-cache.js';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { startLayerServer, type LayerServer } from '../../helpers/layer-server.js';
import { debian12, dpkgStatus } from '../../helpers/dpkg-status.js';
import { gzip, tarball, type TarEntry } from '../../helpers/tarball.js';

/** base: Debian 12 with openssl (two binaries of one source), zlib (binNMU with source version), bash. */
const base: TarEntry[] = [
  { path: 'etc/os-release', type: 'symlink', target: '../usr/lib/os-release' },
  { path: 'usr/lib/os-release', content: debian12 },
  { path: 'bin/bash', content: 'ELF' },
  {
    path: 'var/lib/dpkg/status',
    content: dpkgStatus(
      { name: 'libssl3', version: '3.0.11-1~deb12u2', source: 'openssl' },
      { name: 'openssl', version: '3.0.11-1~deb12u2' },
      { name: 'zlib1g', version: '1:1.2.13.dfsg-1+b1', source: 'zlib (1:1.2.13.dfsg-1)' },
      { name: 'bash', version: '5.2.15-2+b2' },
      { name: 'old-tool', version: '1.0-1', status: 'deinstall ok config-files' },
    ),
  },
];
/** child: upgrades openssl, removes zlib, adds curl; no release file of its own. */
const child: TarEntry[] = [
  {
    path: 'var/lib/dpkg/status',
    content: dpkgStatus(
      { name: 'libssl3', version: '3.0.13-1~deb12u1', source: 'openssl' },
      { name: 'openssl', version: '3.0.13-1~deb12u1' },
      { name: 'bash', version: '5.2.15-2+b2' },
      { name: 'libcurl4', version: '7.88.1-10', source: 'curl' },
    ),
  },
  { path: 'usr/bin/curl', content: 'ELF' },
];
/** grandchild: deletes the package database. */
const grandchild: TarEntry[] = [{ path: 'var/lib/dpkg/.wh.status', content: '' }];
/** app: touches no package database. */
const app: TarEntry[] = [{ path: 'srv/app.js', content: 'console.log(1)' }];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-layers-'));
  await chmod(dir, 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function layerFile(name: string, entries: TarEntry[] | Buffer): Promise<string> {
  const path = join(dir, `${name}.tar.gz`);
  await writeFile(path, Buffer.isBuffer(entries) ? entries : gzip(tarball(entries)));
  return path;
}

function localApp(extra = '', reports?: ReportCache): Promise<TestApp> {
  return testApp({ yaml: `  api:\n    localroots: [${dir}]\n${extra}`, reports });
}

async function post(t: TestApp, layer: Record<string, unknown>, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url: '/v1/layers', payload: { Layer: { Format: 'Docker', ...layer } }, headers });
}

async function report(t: TestApp, name: string, query = '?vulnerabilities', revision = 'B') {
  const res = await t.app.inject({ url: `/v1/layers/${encodeURIComponent(name)}${query}`, headers: { 'X-Clair-Api-Revision': revision } });
  expect(res.statusCode).toBe(200);
  return json(res).Layer;
}

/** "name version (AddedBy) [CVE@FixedBy ...]" per feature, for compact exact assertions. */
function summary(layer: { Features?: Array<Record<string, any>> }): string[] {
  return (layer.Features ?? []).map((f) => {
    const vulns = (f.Vulnerabilities ?? []).map((v: { Name: string; FixedBy?: string }) => `${v.Name}@${v.FixedBy ?? 'none'}`);
    return `${f.Name} ${f.Version} (${f.AddedBy})${vulns.length ? ` [${vulns.join(' ')}]` : ''}`;
  });
}

async function vulnerability(t: TestApp, name: string, pkg: string, fixed: string, severity = 'High') {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/namespaces/debian%3A12/vulnerabilities',
    payload: {
      Vulnerability: {
        Name: name,
        Severity: severity,
        Link: `https://security-tracker.debian.org/tracker/${name}`,
        FixedIn: [{ Name: pkg, Version: fixed }],
      },
    },
  });
  expect(res.statusCode).toBe(201);
}

async function counts(t: TestApp) {
  const { rows } = await t.pool.query(
    `SELECT (SELECT count(*) FROM layer)::int AS layers, (SELECT count(*) FROM layer_scan)::int AS scans,
            (SELECT count(*) FROM layer_diff)::int AS diffs, (SELECT count(*) FROM feature_version)::int AS versions`,
  );
  return rows[0];
}

describe('a parent → child → grandchild chain', () => {
  it('reports exactly the expected features, AddedBy and vulnerabilities for every layer', async () => {
    const t = await localApp();
    // Known before indexing: linked when the layers bring the versions.
    await vulnerability(t, 'CVE-2023-5678', 'openssl', '3.0.13-1~deb12u1');
    await vulnerability(t, 'CVE-2023-45853', 'zlib', 'None', 'Critical');

    for (const [name, entries, parent] of [
      ['base', base, undefined],
      ['child', child, 'base'],
      ['grandchild', grandchild, 'child'],
      ['app', app, 'grandchild'],
    ] as const) {
      const res = await post(t, { Name: name, Path: await layerFile(name, [...entries]), ParentName: parent });
      expect(res.statusCode).toBe(201);
      expect(json(res)).toEqual({
        Layer: {
          Name: name,
          Path: join(dir, `${name}.tar.gz`),
          ...(parent ? { ParentName: parent } : {}),
          Format: 'Docker',
          IndexedByVersion: INDEXER_VERSION,
        },
      });
    }
    // Known after indexing: linked to the versions already stored.
    await vulnerability(t, 'CVE-2024-2398', 'curl', '7.88.1-10+deb12u6', 'Medium');
    await vulnerability(t, 'CVE-2099-0001', 'bash', '5.2.15-2', 'Low'); // fixed before the installed +b2 build: not affected

    const b = await report(t, 'base');
    expect(b.NamespaceName).toBe('debian:12');
    expect(b.ParentName).toBeUndefined();
    expect(summary(b)).toEqual([
      'bash 5.2.15-2+b2 (base)',
      'openssl 3.0.11-1~deb12u2 (base) [CVE-2023-5678@3.0.13-1~deb12u1]',
      'zlib 1:1.2.13.dfsg-1 (base) [CVE-2023-45853@none]',
    ]);
    expect(b.Features[1].Vulnerabilities[0]).toEqual({
      Name: 'CVE-2023-5678',
      NamespaceName: 'debian:12',
      Link: 'https://security-tracker.debian.org/tracker/CVE-2023-5678',
      Severity: 'High',
      FixedBy: '3.0.13-1~deb12u1',
    });

    const c = await report(t, 'child');
    expect(c.NamespaceName).toBe('debian:12');
    expect(c.ParentName).toBe('base');
    expect(summary(c)).toEqual([
      'bash 5.2.15-2+b2 (base)',
      'curl 7.88.1-10 (child) [CVE-2024-2398@7.88.1-10+deb12u6]',
      'openssl 3.0.13-1~deb12u1 (child)',
    ]);

    for (const name of ['grandchild', 'app']) {
      const g = await report(t, name);
      expect(g.NamespaceName).toBe('debian:12');
      expect(g.Features).toEqual([]);
    }
  });

  it('lists features without vulnerabilities for ?features, and nothing for no flag, in both revisions', async () => {
    const t = await localApp();
    await vulnerability(t, 'CVE-2023-5678', 'openssl', '3.0.13-1~deb12u1');
    expect((await post(t, { Name: 'base', Path: await layerFile('base', base) })).statusCode).toBe(201);
    const plain = await report(t, 'base', '');
    expect(plain).toEqual({ Name: 'base', NamespaceName: 'debian:12', IndexedByVersion: INDEXER_VERSION });
    const features = await report(t, 'base', '?features');
    expect(features.Features[1]).toEqual({
      Name: 'openssl',
      NamespaceName: 'debian:12',
      VersionFormat: 'dpkg',
      Version: '3.0.11-1~deb12u2',
      AddedBy: 'base',
    });
    const a = await report(t, 'base', '?features&vulnerabilities', 'A');
    expect(a.Namespace).toBe('debian:12');
    expect(a.Features[1]).toEqual({
      Name: 'openssl',
      Namespace: 'debian:12',
      Version: '3.0.11-1~deb12u2',
      AddedBy: 'base',
      Vulnerabilities: [
        {
          Name: 'CVE-2023-5678',
          Namespace: 'debian:12',
          Severity: 'High',
          Link: 'https://security-tracker.debian.org/tracker/CVE-2023-5678',
          FixedBy: '3.0.13-1~deb12u1',
        },
      ],
    });
    expect((await report(t, 'base', '?features=false')).Features).toBeUndefined();
  });

  it('follows vulnerability changes in later reports', async () => {
    const t = await localApp();
    await post(t, { Name: 'base', Path: await layerFile('base', base) });
    expect(summary(await report(t, 'base'))[1]).toBe('openssl 3.0.11-1~deb12u2 (base)');
    await vulnerability(t, 'CVE-1', 'openssl', 'None');
    expect(summary(await report(t, 'base'))[1]).toBe('openssl 3.0.11-1~deb12u2 (base) [CVE-1@none]');
    await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-1/fixes/openssl',
      payload: { Feature: { Version: '3.0.11-1~deb12u1' } },
    });
    expect(summary(await report(t, 'base'))[1]).toBe('openssl 3.0.11-1~deb12u2 (base)');
    await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-1/fixes/openssl',
      payload: { Feature: { Version: '3.0.11-1~deb12u3' } },
    });
    expect(summary(await report(t, 'base'))[1]).toBe('openssl 3.0.11-1~deb12u2 (base) [CVE-1@3.0.11-1~deb12u3]');
    await t.app.inject({ method: 'DELETE', url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-1' });
    expect(summary(await report(t, 'base'))[1]).toBe('openssl 3.0.11-1~deb12u2 (base)');
  });

  it('serves a report from the cache until a change to what it shows is announced, whoever made it', async () => {
    const t = await localApp();
    await post(t, { Name: 'base', Path: await layerFile('base', base) });
    await vulnerability(t, 'CVE-1', 'openssl', 'None');
    expect(summary(await report(t, 'base'))[1]).toBe('openssl 3.0.11-1~deb12u2 (base) [CVE-1@none]');
    // A change made in SQL, behind the API: the database's triggers announce it all the same.
    await t.pool.query("UPDATE vulnerability_fixedin SET fixed_version = '3.0.11-1~deb12u9' WHERE fixed_version IS NULL");
    await expect.poll(async () => summary(await report(t, 'base'))[1]).toBe('openssl 3.0.11-1~deb12u2 (base) [CVE-1@3.0.11-1~deb12u9]');
  });

  // A 1000-byte cache keeps no report of this size: reports too large to cache are gzipped too.
  it.each([
    ['cached', undefined],
    ['too large to cache', new ReportCache({ reportBytes: 1000 })],
  ])('gzips a report (%s) for clients that accept it, and sends the same JSON', async (_, reports) => {
    const t = await localApp('', reports);
    const many = Array.from({ length: 40 }, (_, i) => ({ name: `lib${i}`, version: `1.${i}-1` }));
    await post(t, {
      Name: 'base',
      Path: await layerFile('many', [base[1]!, { path: 'var/lib/dpkg/status', content: dpkgStatus(...many) }]),
    });
    await vulnerability(t, 'CVE-2023-5678', 'lib7', '1.8-1');
    const plain = await t.app.inject({ url: '/v1/layers/base?features&vulnerabilities' });
    expect(plain.body.length).toBeGreaterThan(1024);
    expect(plain.headers['content-encoding']).toBeUndefined();
    for (let i = 0; i < 2; i++) {
      const compressed = await t.app.inject({
        url: '/v1/layers/base?features&vulnerabilities',
        headers: { 'accept-encoding': 'br, gzip;q=0.9' },
      });
      expect(compressed.statusCode).toBe(200);
      expect(compressed.headers['content-encoding']).toBe('gzip');
      expect(compressed.headers['content-type']).toBe('application/json;charset=utf-8');
      expect(gunzipSync(compressed.rawPayload).toString()).toBe(plain.body);
    }
  });

  it('DELETE removes the layer and its descendants, and their scans', async () => {
    const t = await localApp();
    await post(t, { Name: 'base', Path: await layerFile('base', base) });
    await post(t, { Name: 'child', Path: await layerFile('child', child), ParentName: 'base' });
    await post(t, { Name: 'other', Path: await layerFile('app', app) });
    const res = await t.app.inject({ method: 'DELETE', url: '/v1/layers/base' });
    expect([res.statusCode, res.body]).toEqual([200, '']);
    expect((await t.app.inject({ url: '/v1/layers/child' })).statusCode).toBe(404);
    expect((await t.app.inject({ url: '/v1/layers/other' })).statusCode).toBe(200);
    expect(await counts(t)).toMatchObject({ layers: 1, scans: 1, diffs: 0 });
    const again = await t.app.inject({ method: 'DELETE', url: '/v1/layers/base' });
    expect(again.statusCode).toBe(404);
    expect(json(again)).toEqual({ Error: { Message: 'layer base does not exist' } });
  });
});

describe('distroless layers (dpkg status.d files, no status file)', () => {
  const stanza = (name: string, version: string) =>
    `Package: ${name}\nStatus: install ok installed\nVersion: ${version}\nArchitecture: amd64\n`;

  it("adds each layer's status.d packages to those below it; a status file replaces them all", async () => {
    const t = await localApp();
    await vulnerability(t, 'CVE-2023-4911', 'glibc', '2.36-9+deb12u3');
    const distrolessBase: TarEntry[] = [
      base[1]!,
      { path: 'var/lib/dpkg/status.d/libc6', content: `${stanza('libc6', '2.36-9+deb12u1')}Source: glibc\n` },
      { path: 'var/lib/dpkg/status.d/libc6.md5sums', content: 'ignored' },
    ];
    const python: TarEntry[] = [{ path: 'var/lib/dpkg/status.d/python3.11', content: stanza('python3.11', '3.11.2-6') }];
    const replaced: TarEntry[] = [{ path: 'var/lib/dpkg/status', content: stanza('bash', '5.2.15-2+b2') }];
    await post(t, { Name: 'distroless', Path: await layerFile('distroless', distrolessBase) });
    await post(t, { Name: 'python', ParentName: 'distroless', Path: await layerFile('python', python) });
    await post(t, { Name: 'replaced', ParentName: 'python', Path: await layerFile('replaced', replaced) });
    expect(summary(await report(t, 'distroless'))).toEqual(['glibc 2.36-9+deb12u1 (distroless) [CVE-2023-4911@2.36-9+deb12u3]']);
    expect(summary(await report(t, 'python'))).toEqual([
      'glibc 2.36-9+deb12u1 (distroless) [CVE-2023-4911@2.36-9+deb12u3]',
      'python3.11 3.11.2-6 (python)',
    ]);
    expect(summary(await report(t, 'replaced'))).toEqual(['bash 5.2.15-2+b2 (replaced)']);
  });
});

describe('namespaces of layers', () => {
  it('matches CentOS layers against Red Hat data for the same major release', async () => {
    const t = await localApp();
    const centos = 'NAME="CentOS Linux"\nVERSION="7 (Core)"\nID="centos"\nID_LIKE="rhel fedora"\nVERSION_ID="7"\n';
    await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/rhel%3A7/vulnerabilities',
      payload: { Vulnerability: { Name: 'RHSA-2024:1', Severity: 'High', FixedIn: [{ Name: 'bash', Version: '4.2.46-35.el7_9' }] } },
    });
    // An rpm database is built from the fixture: too large to write by hand.
    const { readFile } = await import('node:fs/promises');
    const sqlite = await readFile(new URL('../../fixtures/rpm/amazonlinux2023-sqlite/rpmdb.sqlite', import.meta.url));
    const path = await layerFile('centos', [
      { path: 'etc/os-release', content: centos },
      { path: 'var/lib/rpm/rpmdb.sqlite', content: sqlite },
    ]);
    expect((await post(t, { Name: 'centos', Path: path })).statusCode).toBe(201);
    const layer = await report(t, 'centos', '?features');
    expect(layer.NamespaceName).toBe('centos:7');
    expect(layer.Features.length).toBeGreaterThan(50);
    for (const f of layer.Features) expect(f.NamespaceName).toBe('rhel:7');
    const bash = layer.Features.find((f: { Name: string }) => f.Name === 'bash');
    expect(bash).toMatchObject({ VersionFormat: 'rpm' });
  });
});

describe('posting layers', () => {
  it('returns an indexed layer at once, without downloading it again', async () => {
    const t = await localApp();
    const path = await layerFile('base', base);
    expect((await post(t, { Name: 'base', Path: path })).statusCode).toBe(201);
    await rm(path);
    const again = await post(t, { Name: 'base', Path: path });
    expect(again.statusCode).toBe(201);
    expect(json(again).Layer.IndexedByVersion).toBe(INDEXER_VERSION);
  });

  it('indexes again a layer indexed by an older indexer, and re-derives its descendants', async () => {
    const t = await localApp();
    await post(t, { Name: 'base', Path: await layerFile('base', base) });
    await post(t, { Name: 'child', Path: await layerFile('child', child), ParentName: 'base' });
    await post(t, { Name: 'grand', Path: await layerFile('app', app), ParentName: 'child' });
    // Pretend base was indexed by an older indexer that missed bash; the new one finds it.
    await t.pool.query("UPDATE layer SET indexed_by_version = 1 WHERE name = 'base'");
    const newer = [
      ...base.slice(0, 3),
      { path: 'var/lib/dpkg/status', content: dpkgStatus({ name: 'bash', version: '5.2.15-2+b7' }, { name: 'dash', version: '0.5.12-2' }) },
    ];
    // A ParentName in the new request is ignored: the stored tree stays as it was (no cycle).
    const res = await post(t, { Name: 'base', Path: await layerFile('base-new', newer), ParentName: 'grand' });
    expect(res.statusCode).toBe(201);
    expect((await report(t, 'base', '')).ParentName).toBeUndefined();
    expect(summary(await report(t, 'base'))).toEqual(['bash 5.2.15-2+b7 (base)', 'dash 0.5.12-2 (base)']);
    // child lists its own packages; grand inherits child's.
    const expectedChild = ['bash 5.2.15-2+b2 (child)', 'curl 7.88.1-10 (child)', 'openssl 3.0.13-1~deb12u1 (child)'];
    expect(summary(await report(t, 'child'))).toEqual(expectedChild);
    expect(summary(await report(t, 'grand'))).toEqual(expectedChild);
  });

  it("inherits a namespace the layer does not name and keeps the parent's for unchanged packages", async () => {
    const t = await localApp();
    await post(t, { Name: 'base', Path: await layerFile('base', base) });
    const upgraded = [
      { path: 'usr/lib/os-release', content: debian12.replace(/12/g, '13').replace('bookworm', 'trixie') },
      {
        path: 'var/lib/dpkg/status',
        content: dpkgStatus({ name: 'bash', version: '5.2.15-2+b2' }, { name: 'bash-completion', version: '1:2.11-8' }),
      },
    ];
    await post(t, { Name: 'upgrade', Path: await layerFile('upgrade', upgraded), ParentName: 'base' });
    const layer = await report(t, 'upgrade', '?features');
    expect(layer.NamespaceName).toBe('debian:13');
    expect(
      layer.Features.map((f: { Name: string; NamespaceName: string; AddedBy: string }) => `${f.Name} ${f.NamespaceName} ${f.AddedBy}`),
    ).toEqual(['bash debian:12 base', 'bash-completion debian:13 upgrade']);
  });

  it('indexes ACI layers from rootfs/', async () => {
    const t = await localApp();
    const aci = base.map((e) => ({ ...e, path: `rootfs/${e.path}` }));
    expect(
      (await post(t, { Name: 'aci', Path: await layerFile('aci', [{ path: 'manifest', content: '{}' }, ...aci]), Format: 'aci' }))
        .statusCode,
    ).toBe(201);
    expect(summary(await report(t, 'aci', '?features')).length).toBe(3);
  });
});

describe('layers over HTTP', () => {
  let server: LayerServer;
  beforeAll(async () => {
    server = await startLayerServer();
  });

  it('downloads with the submitted Authorization and Headers, which are echoed but never stored', async () => {
    const t = await testApp();
    server.serve('/v2/blobs/base', gzip(tarball(base)), { authorization: 'Bearer s3cret' });
    server.serve('/v2/blobs/child', gzip(tarball(child)), { authorization: 'Basic dXNlcjpwYXNz' });
    const first = await post(t, { Name: 'http-base', Path: server.url('/v2/blobs/base'), Authorization: 'Bearer s3cret' });
    expect(first.statusCode).toBe(201);
    expect(json(first).Layer.Authorization).toBe('Bearer s3cret');
    const second = await post(t, {
      Name: 'http-child',
      Path: server.url('/v2/blobs/child'),
      ParentName: 'http-base',
      Headers: { Authorization: 'Basic dXNlcjpwYXNz', 'X-Registry': 'r1' },
    });
    expect(second.statusCode).toBe(201);
    expect(json(second).Layer.Headers).toEqual({ Authorization: 'Basic dXNlcjpwYXNz', 'X-Registry': 'r1' });
    expect(server.requests.find((r) => r.path === '/v2/blobs/child')!.headers['x-registry']).toBe('r1');
    const { rows } = await t.pool.query(
      "SELECT count(*)::int AS n FROM layer_scan WHERE package_dbs::text LIKE '%s3cret%' OR key LIKE '%s3cret%'",
    );
    expect(rows[0].n).toBe(0);
  });

  it('answers 400 when the server refuses the credential, and stores nothing', async () => {
    const t = await testApp();
    server.serve('/v2/blobs/private', gzip(tarball(base)), { authorization: 'Bearer right' });
    const res = await post(t, { Name: 'private', Path: server.url('/v2/blobs/private'), Authorization: 'Bearer wrong' });
    expect(res.statusCode).toBe(400);
    expect(json(res).Error.Message).toMatch(/answered 401/);
    expect(json(res).Error.Message).not.toMatch(/wrong/);
    expect(await counts(t)).toMatchObject({ layers: 0, scans: 0 });
  });

  it('downloads a layer posted twice at once only once, and both requests succeed', async () => {
    const t = await testApp();
    server.serve('/v2/blobs/twice', gzip(tarball(base)));
    const before = server.requests.length;
    const results = await Promise.all([1, 2, 3].map(() => post(t, { Name: 'twice', Path: server.url('/v2/blobs/twice') })));
    expect(results.map((r) => r.statusCode)).toEqual([201, 201, 201]);
    expect(server.requests.slice(before).filter((r) => r.path === '/v2/blobs/twice')).toHaveLength(1);
    expect(await counts(t)).toMatchObject({ layers: 1, scans: 1 });
  });
});

describe('bad layers get a clear 4xx and leave the store unchanged', () => {
  const cases: Array<[string, () => Promise<Record<string, unknown>>, number, RegExp]> = [
    ['no Name', async () => ({ Path: '/x' }), 400, /^Layer\.Name is required$/],
    ['no Path', async () => ({ Name: 'x' }), 400, /^Layer\.Path is required$/],
    ['no Format', async () => ({ Name: 'x', Path: '/x', Format: '' }), 400, /^Layer\.Format is required$/],
    [
      'an unknown Format',
      async () => ({ Name: 'x', Path: '/x', Format: 'rkt' }),
      400,
      /^Layer\.Format "rkt" is not supported: use Docker \(or OCI\) or ACI$/,
    ],
    [
      'an unknown parent',
      async () => ({ Name: 'x', Path: await layerFile('base', base), ParentName: 'nope' }),
      400,
      /^worker: parent layer is unknown, it must be processed first$/,
    ],
    ['a path outside the local roots', async () => ({ Name: 'x', Path: '/etc/passwd' }), 400, /outside clair\.api\.localroots/],
    ['a missing file', async () => ({ Name: 'x', Path: join(dir, 'missing.tar') }), 400, /does not exist/],
    [
      'a file that is not an archive',
      async () => ({ Name: 'x', Path: await layerFile('text', Buffer.from('hello, I am not a layer')) }),
      422,
      /not a readable tar archive/,
    ],
    [
      'a truncated archive',
      async () => ({ Name: 'x', Path: await layerFile('cut', gzip(tarball(base)).subarray(0, 100)) }),
      422,
      /not a readable tar archive/,
    ],
    [
      'packages without a supported OS',
      async () => ({ Name: 'x', Path: await layerFile('noos', [base[3]!]) }),
      422,
      /neither it nor its parents hold a release file of a supported operating system/,
    ],
    [
      'a corrupt rpm database',
      async () => ({
        Name: 'x',
        Path: await layerFile('badrpm', [
          { path: 'etc/os-release', content: 'ID=rhel\nVERSION_ID=9.4\n' },
          { path: 'var/lib/rpm/rpmdb.sqlite', content: 'SQLite format 3\0garbage' },
        ]),
      }),
      422,
      /rpm package database cannot be read: var\/lib\/rpm\/rpmdb\.sqlite/,
    ],
    [
      'a wanted file over maxfilebytes',
      async () => ({
        Name: 'x',
        Path: await layerFile('bigstatus', [{ path: 'var/lib/dpkg/status', content: Buffer.alloc(300_000, 'a') }]),
      }),
      422,
      /over clair\.indexer\.maxfilebytes/,
    ],
    [
      'a decompression bomb',
      async () => ({ Name: 'x', Path: await layerFile('bomb', [{ path: 'zeros', content: Buffer.alloc(4 * 1024 * 1024) }]) }),
      422,
      /decompression bomb/,
    ],
  ];

  it.each(cases)('%s', async (_what, layer, status, message) => {
    const t = await localApp('  indexer:\n    maxfilebytes: 200KiB\n    maxexpandedbytes: 2MiB');
    await post(t, { Name: 'kept', Path: await layerFile('app', app) });
    const before = await counts(t);
    const res = await post(t, await layer());
    expect(res.statusCode).toBe(status);
    expect(json(res).Error.Message).toMatch(message);
    expect(await counts(t)).toEqual(before);
    expect((await t.app.inject({ url: '/v1/layers/kept' })).statusCode).toBe(200);
  });

  it('reads hostile entries without letting them escape or confuse the scan', async () => {
    const t = await localApp();
    const hostile: TarEntry[] = [
      { path: '../../etc/os-release', content: 'ID=alpine\nVERSION_ID=3.19.1\n' },
      { path: '/usr/lib/os-release', content: debian12 },
      { path: 'etc/os-release', type: 'symlink', target: 'loop' },
      { path: 'etc/loop', type: 'symlink', target: 'os-release' },
      { path: 'x/../../../var/lib/dpkg/status', content: 'Package: evil\nVersion: 1\n' },
      { path: './var/lib/dpkg/status', content: dpkgStatus({ name: 'bash', version: '5.2.15-2+b2' }) },
      { path: `${'d/'.repeat(200)}file`, content: 'deep' },
    ];
    const res = await post(t, { Name: 'hostile', Path: await layerFile('hostile', hostile) });
    expect(res.statusCode).toBe(201);
    const layer = await report(t, 'hostile', '?features');
    expect(layer.NamespaceName).toBe('debian:12');
    expect(summary(layer)).toEqual(['bash 5.2.15-2+b2 (hostile)']);
  });

  it('refuses local files when no local roots are configured, saying how to allow them', async () => {
    const t = await testApp();
    const res = await post(t, { Name: 'x', Path: await layerFile('base', base) });
    expect(res.statusCode).toBe(400);
    expect(json(res).Error.Message).toMatch(/add the directory to clair\.api\.localroots/);
  });

  it('answers 404 for an unknown layer', async () => {
    const t = await testApp();
    const res = await t.app.inject({ url: '/v1/layers/nope?features' });
    expect(res.statusCode).toBe(404);
    expect(json(res)).toEqual({ Error: { Message: 'layer nope does not exist' } });
  });
});

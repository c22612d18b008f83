import { createHash, randomBytes } from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { osvSource } from '../../../src/ecosystems/osv/updater.js';
import { UpdaterRunner } from '../../../src/updater/runner.js';
import { Indexer } from '../../../src/indexer/indexer.js';
import { indexerSettings, runnerSettings } from '../../../src/settings.js';
import { LayerScans } from '../../../src/indexer/layer-scans.js';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { freshPool, silentLog } from '../../helpers/db.js';
import { startLayerServer, type LayerServer } from '../../helpers/layer-server.js';
import { debian12, dpkgStatus, type InstalledPackage } from '../../helpers/dpkg-status.js';
import { storeSnapshot } from '../../helpers/store-snapshot.js';
import { gzip, tarball, type TarEntry } from '../../helpers/tarball.js';

const OSV_FIXTURES = pathToFileURL(fileURLToPath(new URL('../../fixtures/feeds/osv/', import.meta.url))).href;
const LISTERS = ['dpkg', 'rpm', 'apk'];
const DETECTORS = ['suse-products', 'os-release', 'lsb-release', 'alpine-release', 'redhat-release', 'apt-sources'];
const STATUS = { listers: LISTERS, detectors: DETECTORS };

/** An app (with the ancestry API) on a fresh database. */
async function v3App(): Promise<TestApp> {
  return testApp({ pool: await freshPool() });
}

/** Debian 12 with openssl (two binaries of one source), zlib (binNMU with source version) and bash. */
const basePackages: InstalledPackage[] = [
  { name: 'libssl3', version: '3.0.11-1~deb12u2', source: 'openssl' },
  { name: 'openssl', version: '3.0.11-1~deb12u2' },
  { name: 'zlib1g', version: '1:1.2.13.dfsg-1+b1', source: 'zlib (1:1.2.13.dfsg-1)' },
  { name: 'bash', version: '5.2.15-2+b2' },
];
/** base: the release file and basePackages. */
const base: TarEntry[] = [
  { path: 'etc/os-release', type: 'symlink', target: '../usr/lib/os-release' },
  { path: 'usr/lib/os-release', content: debian12 },
  { path: 'var/lib/dpkg/status', content: dpkgStatus(...basePackages) },
];
/** app: touches no package database. */
const appLayer: TarEntry[] = [{ path: 'srv/app.js', content: 'console.log(1)' }];
/** upgrade: openssl upgraded, curl added, the rest unchanged; no release file of its own. */
const upgrade: TarEntry[] = [
  {
    path: 'var/lib/dpkg/status',
    content: dpkgStatus(
      { name: 'libssl3', version: '3.0.13-1~deb12u1', source: 'openssl' },
      { name: 'openssl', version: '3.0.13-1~deb12u1' },
      ...basePackages.slice(2),
      { name: 'libcurl4', version: '7.88.1-10', source: 'curl' },
    ),
  },
];
/** tools: adds jq on top of base. */
const tools: TarEntry[] = [{ path: 'var/lib/dpkg/status', content: dpkgStatus(...basePackages, { name: 'jq', version: '1.6-2.1' }) }];

const TOKENS: Record<string, string> = {
  base: 'Bearer base-secret',
  app: 'Basic dXNlcjpwYXNz',
  upgrade: 'Bearer upgrade-secret',
  tools: 'Bearer tools-secret',
};
const LAYERS: Record<string, TarEntry[]> = { base, app: appLayer, upgrade, tools };

let server: LayerServer;
beforeAll(async () => {
  server = await startLayerServer();
  for (const [name, entries] of Object.entries(LAYERS))
    server.serve(`/blobs/${name}`, gzip(tarball(entries)), { authorization: TOKENS[name] });
});

const hashOf = (name: string): string => `sha256:${name.padEnd(64, '0')}`;
const postLayer = (name: string, extraHeaders: Record<string, string> = {}) => ({
  hash: hashOf(name),
  path: server.url(`/blobs/${name}`),
  headers: { Authorization: TOKENS[name]!, ...extraHeaders },
});

async function postAncestry(t: TestApp, payload: unknown) {
  return t.app.inject({ method: 'POST', url: '/ancestry', payload: payload as Record<string, unknown> });
}

const requestsFor = (name: string, since = 0): number => server.requests.slice(since).filter((r) => r.path === `/blobs/${name}`).length;

async function vulnerability(t: TestApp, v: Record<string, unknown>) {
  const res = await t.app.inject({ method: 'POST', url: '/v1/namespaces/debian%3A12/vulnerabilities', payload: { Vulnerability: v } });
  expect(res.statusCode).toBe(201);
}

const NVD = { NVD: { CVSSv3: { Score: 9.8, Vectors: 'AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' } } };

describe('POST and GET /ancestry', () => {
  it('scans the layers with their own headers and reports the features each layer introduces, with vulnerabilities', async () => {
    const t = await v3App();
    // Known before the scan: linked when the ancestry brings the versions.
    await vulnerability(t, {
      Name: 'CVE-2023-45853',
      Severity: 'Critical',
      Description: 'zlib overflow',
      Metadata: NVD,
      FixedIn: [{ Name: 'zlib', Version: 'None' }],
    });
    await vulnerability(t, {
      Name: 'CVE-2024-0727',
      Severity: 'Low',
      Link: 'https://security-tracker.debian.org/tracker/CVE-2024-0727',
      FixedIn: [{ Name: 'openssl', Version: '3.0.14-1~deb12u1' }],
    });

    const since = server.requests.length;
    const res = await postAncestry(t, {
      ancestry_name: 'sha256:image',
      format: 'Docker',
      layers: [postLayer('base', { 'X-Registry': 'r1' }), postLayer('app'), postLayer('upgrade')],
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(json(res)).toEqual({ status: STATUS });
    for (const name of ['base', 'app', 'upgrade']) expect(requestsFor(name, since)).toBe(1);
    const baseRequest = server.requests.slice(since).find((r) => r.path === '/blobs/base')!;
    expect(baseRequest.headers.authorization).toBe(TOKENS.base);
    expect(baseRequest.headers['x-registry']).toBe('r1');

    // Known after the scan: linked to the versions already stored.
    await vulnerability(t, {
      Name: 'CVE-2024-2398',
      Severity: 'Medium',
      Description: 'curl leak',
      FixedIn: [{ Name: 'curl', Version: '7.88.1-10+deb12u6' }],
    });
    await vulnerability(t, { Name: 'CVE-2099-0001', Severity: 'Low', FixedIn: [{ Name: 'bash', Version: '5.2.15-2' }] }); // fixed before +b2: not affected

    const got = await t.app.inject({ url: '/ancestry/sha256:image' });
    expect(got.statusCode).toBe(200);
    expect(json(got)).toEqual({
      ancestry: {
        name: 'sha256:image',
        scanned_listers: LISTERS,
        scanned_detectors: DETECTORS,
        layers: [
          {
            layer: { hash: hashOf('base') },
            // openssl 3.0.11 was introduced here but the upgrade replaced it: not in the image any more.
            detected_features: [
              { name: 'bash', namespace_name: 'debian:12', version: '5.2.15-2+b2', version_format: 'dpkg' },
              {
                name: 'zlib',
                namespace_name: 'debian:12',
                version: '1:1.2.13.dfsg-1',
                version_format: 'dpkg',
                vulnerabilities: [
                  {
                    name: 'CVE-2023-45853',
                    namespace_name: 'debian:12',
                    description: 'zlib overflow',
                    severity: 'Critical',
                    metadata: '{"NVD":{"CVSSv3":{"Score":9.8,"Vectors":"AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}}}',
                  },
                ],
              },
            ],
          },
          { layer: { hash: hashOf('app') } },
          {
            layer: { hash: hashOf('upgrade') },
            detected_features: [
              {
                name: 'curl',
                namespace_name: 'debian:12',
                version: '7.88.1-10',
                version_format: 'dpkg',
                vulnerabilities: [
                  {
                    name: 'CVE-2024-2398',
                    namespace_name: 'debian:12',
                    description: 'curl leak',
                    severity: 'Medium',
                    fixed_by: '7.88.1-10+deb12u6',
                  },
                ],
              },
              {
                name: 'openssl',
                namespace_name: 'debian:12',
                version: '3.0.13-1~deb12u1',
                version_format: 'dpkg',
                vulnerabilities: [
                  {
                    name: 'CVE-2024-0727',
                    namespace_name: 'debian:12',
                    link: 'https://security-tracker.debian.org/tracker/CVE-2024-0727',
                    severity: 'Low',
                    fixed_by: '3.0.14-1~deb12u1',
                  },
                ],
              },
            ],
          },
        ],
      },
      status: STATUS,
    });
    const metadata = json(got).ancestry.layers[0].detected_features[1].vulnerabilities[0].metadata;
    expect(JSON.parse(metadata)).toEqual(NVD);
  });

  it('replaces an ancestry posted again under the same name', async () => {
    const t = await v3App();
    const name = 'sha256:replaced';
    expect(
      (await postAncestry(t, { ancestry_name: name, format: 'Docker', layers: [postLayer('base'), postLayer('upgrade')] })).statusCode,
    ).toBe(200);
    const firstId = (await t.pool.query('SELECT id FROM ancestry WHERE name = $1', [name])).rows[0].id;
    expect(
      (await postAncestry(t, { ancestry_name: name, format: 'Docker', layers: [postLayer('base'), postLayer('tools'), postLayer('app')] }))
        .statusCode,
    ).toBe(200);

    const layers = json(await t.app.inject({ url: `/ancestry/${name}` })).ancestry.layers;
    expect(layers.map((l: { layer: { hash: string } }) => l.layer.hash)).toEqual([hashOf('base'), hashOf('tools'), hashOf('app')]);
    const names = layers.map((l: { detected_features?: Array<{ name: string; version: string }> }) =>
      (l.detected_features ?? []).map((f) => `${f.name} ${f.version}`),
    );
    expect(names).toEqual([['bash 5.2.15-2+b2', 'openssl 3.0.11-1~deb12u2', 'zlib 1:1.2.13.dfsg-1'], ['jq 1.6-2.1'], []]);
    const rows = (await t.pool.query('SELECT id FROM ancestry WHERE name = $1', [name])).rows;
    expect(rows).toHaveLength(1);
    expect(rows[0].id).toBeGreaterThan(firstId);
    const stored = (await t.pool.query('SELECT count(*)::int AS n FROM ancestry_layer WHERE ancestry_id = $1', [rows[0].id])).rows[0].n;
    expect(stored).toBe(3);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM ancestry_layer')).rows[0].n).toBe(3);
  });

  it('writes nothing when the same ancestry is posted again', async () => {
    const t = await v3App();
    const body = { ancestry_name: 'sha256:same', format: 'Docker', layers: [postLayer('base'), postLayer('upgrade')] };
    expect((await postAncestry(t, body)).statusCode).toBe(200);
    const before = await storeSnapshot(t.pool);
    expect((await postAncestry(t, body)).statusCode).toBe(200);
    expect(await storeSnapshot(t.pool)).toEqual(before);
  });

  it('reuses the layers already scanned: only new layers are downloaded, and a layer once per request', async () => {
    const t = await v3App();
    let since = server.requests.length;
    expect(
      (await postAncestry(t, { ancestry_name: 'first', format: 'Docker', layers: [postLayer('base'), postLayer('app')] })).statusCode,
    ).toBe(200);
    expect([requestsFor('base', since), requestsFor('app', since)]).toEqual([1, 1]);

    since = server.requests.length;
    const second = await postAncestry(t, {
      ancestry_name: 'second',
      format: 'Docker',
      layers: [postLayer('base'), postLayer('app'), postLayer('upgrade')],
    });
    expect(second.statusCode).toBe(200);
    expect(server.requests.slice(since).map((r) => r.path)).toEqual(['/blobs/upgrade']);
    // A reused layer needs no credential at all: it is never fetched.
    since = server.requests.length;
    const third = await postAncestry(t, {
      ancestry_name: 'third',
      format: 'Docker',
      layers: [
        { hash: hashOf('base'), path: server.url('/blobs/base') },
        { hash: hashOf('app'), path: server.url('/blobs/app'), headers: {} },
      ],
    });
    expect(third.statusCode).toBe(200);
    expect(server.requests.length).toBe(since);

    // The same new layer in two ancestries posted at once, and twice within one: one download.
    since = server.requests.length;
    const results = await Promise.all([
      postAncestry(t, { ancestry_name: 'fourth', format: 'Docker', layers: [postLayer('base'), postLayer('tools'), postLayer('tools')] }),
      postAncestry(t, { ancestry_name: 'fifth', format: 'Docker', layers: [postLayer('base'), postLayer('tools')] }),
    ]);
    expect(results.map((r) => r.statusCode)).toEqual([200, 200]);
    expect(server.requests.slice(since).map((r) => r.path)).toEqual(['/blobs/tools']);
    const fourth = json(await t.app.inject({ url: '/ancestry/fourth' })).ancestry.layers;
    expect(fourth).toHaveLength(3);
    expect(fourth[1].detected_features.map((f: { name: string }) => f.name)).toEqual(['jq']);
    expect(fourth[2]).toEqual({ layer: { hash: hashOf('tools') } });
    expect((await t.pool.query('SELECT count(*)::int AS n FROM layer_scan')).rows[0].n).toBe(4);
  });

  it('downloads a layer scanned by an older indexer version again', async () => {
    const t = await v3App();
    expect((await postAncestry(t, { ancestry_name: 'old', format: 'Docker', layers: [postLayer('base')] })).statusCode).toBe(200);
    await t.pool.query('UPDATE layer_scan SET indexed_by_version = 0');
    const since = server.requests.length;
    expect((await postAncestry(t, { ancestry_name: 'old', format: 'Docker', layers: [postLayer('base')] })).statusCode).toBe(200);
    expect(server.requests.slice(since).map((r) => r.path)).toEqual(['/blobs/base']);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM layer_scan')).rows[0].n).toBe(1);
  });

  it('downloads a hash once across replicas: the lease makes the second wait and reuse the stored scan', async () => {
    const pool = await freshPool();
    const indexer = new Indexer({ pool, settings: indexerSettings(parseConfig('')), log: silentLog });
    const [a, b] = [new LayerScans({ pool, indexer }), new LayerScans({ pool, indexer })];
    const since = server.requests.length;
    const request = { ...postLayer('upgrade'), format: 'docker' as const };
    const [first, second] = await Promise.all([a.scan(request), b.scan(request)]);
    expect(server.requests.slice(since).map((r) => r.path)).toEqual(['/blobs/upgrade']);
    expect(first.scanId).toBe(second.scanId);
    expect(second.scan).toEqual(first.scan);
    expect((await pool.query("SELECT count(*)::int AS n FROM lock WHERE name LIKE 'scan/%'")).rows[0].n).toBe(0);
  });

  it('accepts lowerCamelCase names, any case of the format, and ignores unknown fields', async () => {
    const t = await v3App();
    const res = await postAncestry(t, {
      ancestryName: 'camel',
      format: 'oci',
      layers: [{ ...postLayer('base'), size: 123, mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip' }],
      unknown: { nested: true },
    });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ status: STATUS });
    const got = json(await t.app.inject({ url: '/ancestry/camel' }));
    expect(got.ancestry.name).toBe('camel');
    expect(got.ancestry.layers[0].detected_features).toHaveLength(3);
    // The proto name wins over its camel spelling, and Name/Path-like keys are not rewritten (no v1 normalisation).
    const both = await postAncestry(t, {
      ancestry_name: 'snake',
      ancestryName: 'camel2',
      Format: 'ACI',
      format: 'Docker',
      layers: [postLayer('app')],
    });
    expect(both.statusCode).toBe(200);
    expect((await t.app.inject({ url: '/ancestry/snake' })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/ancestry/camel2' })).statusCode).toBe(404);
  });
});

describe('errors: {"error", "code", "message"} with the grpc-gateway status', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await v3App();
  });

  const valid = () => ({ ancestry_name: 'bad', format: 'Docker', layers: [postLayer('base'), postLayer('app'), postLayer('upgrade')] });

  async function expectError(
    res: { statusCode: number; body: string; headers: Record<string, unknown> },
    status: number,
    code: number,
    message: string | RegExp,
  ) {
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = json(res);
    expect(Object.keys(body).sort()).toEqual(['code', 'error', 'message']);
    expect(body.code).toBe(code);
    expect(body.error).toBe(body.message);
    if (typeof message === 'string') expect(body.message).toBe(message);
    else expect(body.message).toMatch(message);
  }

  it('answers 400 InvalidArgument for invalid requests', async () => {
    const cases: Array<[unknown, string | RegExp]> = [
      [{ ...valid(), ancestry_name: '' }, 'ancestry_name is required'],
      [{ ...valid(), ancestry_name: undefined }, 'ancestry_name is required'],
      [{ ...valid(), ancestry_name: 7 }, 'ancestry_name must be a string or null (got 7)'],
      [{ ...valid(), ancestryName: 7, ancestry_name: undefined }, 'ancestry_name must be a string'],
      [{ ...valid(), layers: [] }, "layers is required: list the ancestry's layers, parent first"],
      [{ ...valid(), layers: 'x' }, 'layers must be a list or null (got "x")'],
      [{ ...valid(), layers: [postLayer('base'), 'x'] }, 'layers[1] must be a JSON object (got "x")'],
      [{ ...valid(), layers: [{ ...postLayer('base'), hash: '' }] }, 'layers[0].hash is required'],
      [
        { ...valid(), layers: [postLayer('base'), postLayer('app'), { ...postLayer('upgrade'), path: '' }] },
        /^layers\[2\]\.path is required: the layer sha256:upgrade0+ has not been scanned before/,
      ],
      [
        { ...valid(), layers: [{ ...postLayer('base'), headers: { Authorization: 1 } }] },
        'layers[0].headers.Authorization must be a string (got 1)',
      ],
      [{ ...valid(), layers: [{ ...postLayer('base'), headers: ['a'] }] }, 'layers[0].headers must be a JSON object or null'],
      [{ ...valid(), layers: [{ ...postLayer('base'), hash: 'v1/base' }] }, 'layers[0].hash must not start with "v1/"'],
      [{ ...valid(), format: 'tar' }, 'format "tar" is not supported: use Docker (or OCI) or ACI'],
      [{ ...valid(), format: '' }, 'format is required: use Docker (or OCI) or ACI'],
      [[valid()], 'request body must be a JSON object'],
    ];
    for (const [payload, message] of cases) {
      await expectError(await postAncestry(t, payload), 400, 3, message);
    }
    await expectError(
      await t.app.inject({
        method: 'POST',
        url: '/ancestry',
        payload: '{"ancestry_name": "x",',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      3,
      /^request body is not valid JSON/,
    );
    await expectError(await t.app.inject({ method: 'POST', url: '/ancestry' }), 400, 3, /^request body is empty/);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM ancestry')).rows[0].n).toBe(0);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM layer_scan')).rows[0].n).toBe(0);
  });

  it('answers 404 NotFound for an unknown ancestry', async () => {
    await expectError(await t.app.inject({ url: '/ancestry/nope' }), 404, 5, "requested ancestry 'nope' is not found");
  });

  it('answers 400 InvalidArgument to a name the database cannot store', async () => {
    const message = 'a value contains a NUL character or invalid UTF-8, which cannot be stored; remove it';
    await expectError(await t.app.inject({ url: '/ancestry/a%00b' }), 400, 3, message);
    await expectError(await t.app.inject({ url: '/notifications/a%00b' }), 400, 3, message);
  });

  it('answers 400 InvalidArgument, naming the layer, when a layer cannot be downloaded or read; nothing is stored', async () => {
    const refused = await postAncestry(t, {
      ...valid(),
      layers: [postLayer('base'), { ...postLayer('app'), headers: { Authorization: 'Bearer wrong' } }],
    });
    await expectError(refused, 400, 3, new RegExp(`^layers\\[1\\] \\(${hashOf('app')}\\): could not download the layer: .*answered 401`));
    expect(json(refused).message).not.toContain('wrong');

    server.serve('/blobs/garbage', randomBytes(4096));
    const unreadable = await postAncestry(t, {
      ...valid(),
      layers: [postLayer('base'), { hash: hashOf('garbage'), path: server.url('/blobs/garbage') }],
    });
    await expectError(unreadable, 400, 3, new RegExp(`^layers\\[1\\] \\(${hashOf('garbage')}\\): the layer is not a readable tar archive`));

    server.serve(
      '/blobs/no-os',
      gzip(tarball([{ path: 'var/lib/dpkg/status', content: dpkgStatus({ name: 'bash', version: '5.2.15-2' }) }])),
    );
    const noOs = await postAncestry(t, { ...valid(), layers: [{ hash: hashOf('no-os'), path: server.url('/blobs/no-os') }] });
    await expectError(
      noOs,
      400,
      3,
      new RegExp(`^layers\\[0\\] \\(${hashOf('no-os')}\\): the layer holds a dpkg package database, but neither it nor its parents`),
    );

    // A sha256 hash is the layer's digest: bytes that are not what it names are refused, and
    // nothing is stored under it for image scans and uploads to reuse.
    const baseBytes = gzip(tarball(base));
    const otherDigest = `sha256:${createHash('sha256').update('another layer').digest('hex')}`;
    server.serve('/blobs/mislabelled', baseBytes);
    const mislabelled = await postAncestry(t, { ...valid(), layers: [{ hash: otherDigest, path: server.url('/blobs/mislabelled') }] });
    await expectError(mislabelled, 400, 3, new RegExp(`^layers\\[0\\] \\(${otherDigest}\\): .*the bytes received have the digest sha256:`));
    expect((await t.pool.query('SELECT count(*)::int AS n FROM layer_scan WHERE key = $1', [otherDigest])).rows[0].n).toBe(0);
    const trueDigest = `sha256:${createHash('sha256').update(baseBytes).digest('hex')}`;
    const labelled = await postAncestry(t, { ...valid(), layers: [{ hash: trueDigest, path: server.url('/blobs/mislabelled') }] });
    expect(labelled.statusCode, labelled.body).toBe(200);
    await t.pool.query('DELETE FROM ancestry');

    // A client may name a layer by its uncompressed digest (the image config's rootfs.diff_ids):
    // that of the whole tar stream, here padded to 10 KiB records as GNU tar writes it.
    const tar = tarball(base);
    const paddedTar = Buffer.concat([tar, Buffer.alloc(10240 - (tar.length % 10240))]);
    const diffId = `sha256:${createHash('sha256').update(paddedTar).digest('hex')}`;
    const blobDigest = `sha256:${createHash('sha256').update(gzip(paddedTar)).digest('hex')}`;
    server.serve('/blobs/by-diff-id', gzip(paddedTar));
    const byDiffId = await postAncestry(t, { ...valid(), layers: [{ hash: diffId, path: server.url('/blobs/by-diff-id') }] });
    expect(byDiffId.statusCode, byDiffId.body).toBe(200);
    const ancestry = json(await t.app.inject({ url: `/ancestry/${valid().ancestry_name}` })).ancestry;
    expect(ancestry.layers.map((l: { layer: { hash: string } }) => l.layer.hash)).toEqual([diffId]);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM layer_scan WHERE key = $1', [diffId])).rows[0].n).toBe(1);
    await t.pool.query('DELETE FROM ancestry');
    // Bytes that cannot be read have no uncompressed digest to compare: the answer says why.
    const unreadableDigest = `sha256:${createHash('sha256')
      .update(Buffer.from(await (await fetch(server.url('/blobs/garbage'))).arrayBuffer()))
      .digest('hex')}`;
    const garbageUnderDigest = await postAncestry(t, { ...valid(), layers: [{ hash: otherDigest, path: server.url('/blobs/garbage') }] });
    await expectError(
      garbageUnderDigest,
      400,
      3,
      new RegExp(
        `^layers\\[0\\] \\(${otherDigest}\\): layer ${otherDigest}: the bytes received have the digest ${unreadableDigest}; ` +
          'their uncompressed digest is unknown \\(the layer is not a readable tar archive \\(.*\\)\\); nothing was stored$',
      ),
    );
    // Under a digest it is neither, the answer names both digests the bytes have.
    const wrong = await postAncestry(t, { ...valid(), layers: [{ hash: otherDigest, path: server.url('/blobs/by-diff-id') }] });
    await expectError(
      wrong,
      400,
      3,
      `layers[0] (${otherDigest}): layer ${otherDigest}: the bytes received have the digest ${blobDigest}, and uncompressed the digest ${diffId}; nothing was stored`,
    );

    const missing = await postAncestry(t, { ...valid(), layers: [{ hash: hashOf('missing'), path: server.url('/blobs/missing') }] });
    await expectError(missing, 400, 3, /answered 404/);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM ancestry')).rows[0].n).toBe(0);
  });
});

describe('application packages in an ancestry', () => {
  it('reports them in their ecosystem namespace, with the layer that added them and their OSV advisories', async () => {
    const t = await v3App();
    const config = parseConfig(`clair:\n  updater:\n    sources:\n      osv: { url: "${OSV_FIXTURES}" }\n`);
    expect((await new UpdaterRunner({ pool: t.pool, settings: runnerSettings(config), log: silentLog }).run(osvSource)).status).toBe(
      'updated',
    );
    const packageJson = (name: string, version: string) => JSON.stringify({ name, version });
    server.serve(
      '/blobs/node-app',
      gzip(
        tarball([
          { path: 'srv/app/node_modules/minimist/package.json', content: packageJson('minimist', '1.2.0') },
          { path: 'srv/app/node_modules/left-pad/package.json', content: packageJson('left-pad', '1.3.0') },
        ]),
      ),
      { authorization: 'Bearer node-secret' },
    );
    const res = await postAncestry(t, {
      ancestry_name: 'sha256:node-image',
      format: 'Docker',
      layers: [
        postLayer('base'),
        { hash: hashOf('node-app'), path: server.url('/blobs/node-app'), headers: { Authorization: 'Bearer node-secret' } },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const got = json(await t.app.inject({ url: '/ancestry/sha256:node-image' })) as {
      ancestry: { layers: Array<{ layer: { hash: string }; detected_features: Array<Record<string, unknown>> }> };
    };
    const [baseLayer, nodeLayer] = got.ancestry.layers;
    expect(baseLayer?.detected_features.every((f) => f.namespace_name === 'debian:12')).toBe(true);
    expect(nodeLayer?.layer.hash).toBe(hashOf('node-app'));
    const found = (nodeLayer?.detected_features ?? []).map((f) => ({
      name: f.name,
      namespace_name: f.namespace_name,
      version: f.version,
      vulnerabilities: ((f.vulnerabilities as Array<{ name: string; fixed_by?: string }> | undefined) ?? []).map(
        (v) => `${v.name} ${v.fixed_by}`,
      ),
    }));
    expect(found).toEqual([
      { name: 'left-pad', namespace_name: 'npm', version: '1.3.0', vulnerabilities: [] },
      {
        name: 'minimist',
        namespace_name: 'npm',
        version: '1.2.0',
        vulnerabilities: ['GHSA-vh95-rmgr-6w4m 1.2.3', 'GHSA-xvch-5gv4-984h 1.2.6'],
      },
    ]);
  });
});

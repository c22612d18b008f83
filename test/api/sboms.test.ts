/**
 * SBOMs posted to the server (POST /tarsier/v1/sboms) are stored as images: listed, reported with
 * the vulnerabilities affecting their packages, shown by the dashboard, counted again when a new
 * vulnerability affects one of their packages and named by its notification; the same document
 * again is the same image; a malformed one is a 400 naming the field, with nothing stored. Real
 * documents written by npm, cyclonedx-npm and hand-written ones (test/fixtures/sbom).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { SBOM_BODY_LIMIT_BYTES } from '../../src/api/limits.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';

const fixture = (name: string): Buffer => readFileSync(new URL(`../fixtures/sbom/${name}`, import.meta.url));
const digestOf = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

const NPM_CDX = fixture('npm-sbom-11.19.1.cdx.json');
const NPM_SPDX = fixture('npm-sbom-11.19.1.spdx.json');
const OS_CDX = fixture('os-packages.cdx-1.4.json');

/** Rows of every table an SBOM is stored in: a refused one leaves them as they were. */
async function storedRows(t: TestApp): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of [
    'image',
    'image_tag',
    'repository_tag',
    'ancestry',
    'ancestry_feature',
    'layer_scan',
    'feature',
    'feature_version',
  ]) {
    counts[table] = (await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
  }
  return counts;
}

describe('POST /tarsier/v1/sboms', () => {
  let t: TestApp;

  const post = (body: Buffer | string, contentType: string, query = '') =>
    t.app.inject({ method: 'POST', url: `/tarsier/v1/sboms${query}`, headers: { 'content-type': contentType }, payload: body });

  beforeAll(async () => {
    t = await testApp();
    await addVulnerability(t, 'npm', { Name: 'CVE-2099-6001', Severity: 'High', FixedIn: [{ Name: 'lodash', Version: '4.17.21' }] });
  });

  it('stores a CycloneDX document as an image of registry sbom, named by the document, with the vulnerabilities of its packages', async () => {
    const res = await post(NPM_CDX, 'application/vnd.cyclonedx+json');
    expect(res.statusCode, res.body).toBe(201);
    const digest = digestOf(NPM_CDX);
    const { Image, Skipped } = json(res);
    expect(Image).toMatchObject({
      Registry: 'sbom',
      Repository: 'npm-sbom-fixture@1.0.0',
      Digest: digest,
      Platform: 'unknown',
      MediaType: 'application/vnd.cyclonedx+json',
      Tags: ['latest'],
      Summary: { High: { Total: 1, Fixable: 1 } },
      KnownExploited: 0,
      Data: { State: 'current', Namespaces: [{ Name: 'npm', State: 'current', Sources: [{ Name: 'api' }] }] },
    });
    expect(Skipped).toEqual([]);

    const listed = json(await t.app.inject({ url: '/tarsier/v1/images?registry=sbom' })).Images;
    expect(listed.map((i: { Digest: string }) => i.Digest)).toEqual([digest]);

    const detail = json(await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image;
    expect(detail.Layers).toEqual([digest]);
    expect(detail.References).toEqual([
      expect.objectContaining({ Registry: 'sbom', Repository: 'npm-sbom-fixture@1.0.0', Tags: ['latest'] }),
    ]);
    expect(detail.Packages).toHaveLength(16);
    const lodash = detail.Packages.find((p: { Name: string }) => p.Name === 'lodash');
    expect(lodash).toEqual({
      Name: 'lodash',
      Version: '4.17.15',
      NamespaceName: 'npm',
      VersionFormat: 'semver',
      AddedBy: digest,
      Vulnerabilities: [expect.objectContaining({ Name: 'CVE-2099-6001', NamespaceName: 'npm', Severity: 'High', FixedBy: '4.17.21' })],
    });
    const affected = detail.Packages.filter((p: { Vulnerabilities: unknown[] }) => p.Vulnerabilities.length > 0);
    expect(affected.map((p: { Name: string }) => p.Name)).toEqual(['lodash']);

    // The dashboard shows it as it shows an image.
    const page = await t.app.inject({ url: `/ui/images/${digest}` });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('CVE-2099-6001');
    expect(page.body).toContain('lodash');
  });

  it('answers 200 with the same image when the document is posted again, and stores nothing new', async () => {
    const before = await storedRows(t);
    const ancestry = (await t.pool.query('SELECT id, created_at FROM ancestry WHERE name = $1', [digestOf(NPM_CDX)])).rows[0];
    const res = await post(NPM_CDX, 'application/json');
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res).Image).toMatchObject({ Registry: 'sbom', Repository: 'npm-sbom-fixture@1.0.0', Digest: digestOf(NPM_CDX) });
    expect(await storedRows(t)).toEqual(before);
    expect((await t.pool.query('SELECT id, created_at FROM ancestry WHERE name = $1', [digestOf(NPM_CDX)])).rows[0]).toEqual(ancestry);
  });

  it('stores an SPDX document the same way, under the name asked for, whatever the Content-Type says', async () => {
    const res = await post(NPM_SPDX, 'application/x-www-form-urlencoded', '?name=team%2Fshop');
    expect(res.statusCode, res.body).toBe(201);
    const { Image, Skipped } = json(res);
    expect(Image).toMatchObject({
      Registry: 'sbom',
      Repository: 'team/shop',
      Digest: digestOf(NPM_SPDX),
      MediaType: 'application/spdx+json',
      Tags: ['latest'],
      Summary: { High: { Total: 1, Fixable: 1 } },
    });
    expect(Skipped).toEqual([]);
    const exposed = json(await t.app.inject({ url: '/tarsier/v1/vulnerabilities/CVE-2099-6001/images' })).Images;
    expect(exposed.map((i: { Repository: string }) => i.Repository)).toEqual(['npm-sbom-fixture@1.0.0', 'team/shop']);
  });

  it('answers what it skipped, and counts nothing where a namespace has no data', async () => {
    await addVulnerability(t, 'debian:12', {
      Name: 'CVE-2099-6002',
      Severity: 'Medium',
      FixedIn: [{ Name: 'openssl', Version: '3.0.13-1~deb12u1' }],
    });
    const res = await post(OS_CDX, 'application/vnd.cyclonedx+json', '?name=os');
    expect(res.statusCode, res.body).toBe(201);
    const { Image, Skipped } = json(res);
    expect(Skipped.map((s: { At: string; Reason: string }) => `${s.At} ${s.Reason}`)).toEqual([
      'components[0] no-purl',
      'components[10] unknown-release',
      'components[11] unknown-distribution',
      'components[12] unknown-release',
      'components[13] unsupported-type',
    ]);
    expect(Skipped[4]).toEqual({
      At: 'components[13]',
      Name: 'openssl',
      Purl: 'pkg:generic/openssl@3.0.11',
      Reason: 'unsupported-type',
      Why: 'no ecosystem or distribution has pkg:generic packages',
    });
    // debian:12 has data, the other releases none: the counts are unknown, never 0.
    expect(Image.Summary).toBeNull();
    expect(Image.Data.State).toBe('missing');
    const states = Object.fromEntries(Image.Data.Namespaces.map((n: { Name: string; State: string }) => [n.Name, n.State]));
    expect(states).toMatchObject({ 'debian:12': 'current', 'ubuntu:22.04': 'missing', 'rhel:9': 'missing', 'alpine:v3.18': 'missing' });
    const detail = json(await t.app.inject({ url: `/tarsier/v1/images/${Image.Digest}` })).Image;
    const openssl = detail.Packages.find(
      (p: { Name: string; NamespaceName: string }) => p.Name === 'openssl' && p.NamespaceName === 'debian:12',
    );
    expect(openssl.Vulnerabilities.map((v: { Name: string; FixedBy: string }) => `${v.Name} ${v.FixedBy}`)).toEqual([
      'CVE-2099-6002 3.0.13-1~deb12u1',
    ]);
  });

  it('refuses a malformed document with a 400 naming the field, and stores nothing', async () => {
    const before = await storedRows(t);
    const malformed = JSON.stringify({
      bomFormat: 'CycloneDX',
      specVersion: '1.5',
      components: [
        { type: 'library', name: 'lodash', version: '4.17.15', purl: 'pkg:npm/lodash@4.17.15' },
        { type: 'library', name: 'broken', purl: 'lodash@4.17.15' },
      ],
    });
    const res = await post(malformed, 'application/vnd.cyclonedx+json', '?name=broken');
    expect(res.statusCode).toBe(400);
    expect(json(res).Error.Message).toMatch(/^components\[1\]\.purl is not a package URL/);
    const notSbom = await post('{"name": "x"}', 'application/json');
    expect(notSbom.statusCode).toBe(400);
    expect(json(notSbom).Error.Message).toMatch(/neither bomFormat \(CycloneDX\) nor spdxVersion \(SPDX\)/);
    const version = await post('{"spdxVersion": "SPDX-3.0"}', 'application/spdx+json');
    expect(version.statusCode).toBe(400);
    expect(json(version).Error.Message).toMatch(/^spdxVersion "SPDX-3.0" is not read/);
    const empty = await post('', 'application/json');
    expect(empty.statusCode).toBe(400);
    // Read whatever its Content-Type (curl -d sends a form type), but as sent: never compressed.
    const gzipped = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/sboms',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(NPM_CDX),
    });
    expect(gzipped.statusCode).toBe(415);
    const large = await post(Buffer.alloc(SBOM_BODY_LIMIT_BYTES + 1, ' '), 'application/json');
    expect(large.statusCode).toBe(413);
    expect(json(large).Error.Message).toBe('request body is larger than the 32 MiB limit');
    expect(await storedRows(t)).toEqual(before);
  });

  it('counts an SBOM image again when a new vulnerability affects one of its packages, and names it in the notification', async () => {
    const digest = digestOf(NPM_CDX);
    await addVulnerability(t, 'npm', { Name: 'CVE-2099-6003', Severity: 'Critical', FixedIn: [{ Name: 'minimist', Version: '1.2.6' }] });
    const listed = json(await t.app.inject({ url: '/tarsier/v1/images?registry=sbom&repository=npm-sbom-fixture%401.0.0' })).Images;
    // minimist 1.2.0 and 0.0.8 are both affected: one vulnerability.
    expect(listed[0].Summary).toEqual({ Critical: { Total: 1, Fixable: 1 }, High: { Total: 1, Fixable: 1 } });
    const detail = json(await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image;
    const minimist = detail.Packages.filter((p: { Name: string }) => p.Name === 'minimist');
    expect(
      minimist.map((p: { Version: string; Vulnerabilities: Array<{ Name: string; FixedBy: string }> }) => [
        p.Version,
        p.Vulnerabilities.map((v) => `${v.Name} ${v.FixedBy}`),
      ]),
    ).toEqual([
      ['0.0.8', ['CVE-2099-6003 1.2.6']],
      ['1.2.0', ['CVE-2099-6003 1.2.6']],
    ]);
    const name = (await t.pool.query<{ name: string }>('SELECT name FROM notification ORDER BY id DESC LIMIT 1')).rows[0]!.name;
    const notification = json(await t.app.inject({ url: `/tarsier/v1/notifications/${name}` })).Notification;
    expect(notification.New.Vulnerability).toMatchObject({ Name: 'CVE-2099-6003', NamespaceName: 'npm', Severity: 'Critical' });
    expect(notification.New.Images.map((i: { Registry: string; Repository: string; Digest: string; Tags: string[] }) => i)).toEqual([
      { Registry: 'sbom', Repository: 'npm-sbom-fixture@1.0.0', Digest: digest, Platform: 'unknown', Tags: ['latest'] },
      { Registry: 'sbom', Repository: 'team/shop', Digest: digestOf(NPM_SPDX), Platform: 'unknown', Tags: ['latest'] },
    ]);
  });
});

/**
 * The images API (/tarsier/v1) against a real registry (distribution's docker-registry, images
 * pushed with skopeo): what a user scanning images from a registry depends on, each asserted over
 * HTTP — the summary of a scanned image and its vulnerability counts, the layer that added each
 * package, one image per platform of an index, layers downloaded once, tags that move, filters and
 * paging, a registry that sends the wrong bytes, the errors a user acts on — and layer uploads
 * (PUT /tarsier/v1/layers) feeding the ancestry API. Registry parts run where the programs are
 * installed (CI installs them); the queue and webhooks are in image-webhooks.test.ts.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';
import { debianLayer, layer, ociLayout, pushImage, type ImageSpec, type OciLayout } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, startRegistryProxy, type Registry, type RegistryProxy } from '../helpers/registry.js';

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : '';

const sha256 = (data: Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** The namespace debianLayer(9)'s os-release names. */
const NAMESPACE = 'debian:9';

/** Fixed in a later bash than the image's 4.4-5: affects the image, fixable. */
const FIXABLE = { Name: 'CVE-2099-1001', Severity: 'High', FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }] };
/** No fix yet for zlib: affects the image, not fixable. */
const UNFIXED = { Name: 'CVE-2099-1002', Severity: 'Medium', FixedIn: [{ Name: 'zlib', Version: 'None' }] };
/** Fixed before the image's bash: affects nothing. */
const FIXED_BEFORE = { Name: 'CVE-2099-1003', Severity: 'Critical', FixedIn: [{ Name: 'bash', Version: '4.3-1' }] };
/** What FIXABLE and UNFIXED make of a debianLayer(9) image. */
const DEBIAN_9_SUMMARY = { High: { Total: 1, Fixable: 1 }, Medium: { Total: 1, Fixable: 0 } };

/** clair.registries for these hosts over plain HTTP, with the registry's account when given. */
function registriesYaml(hosts: Array<{ host: string; username?: string; password?: string }>): string {
  const entry = ({ host, username, password }: (typeof hosts)[number]) =>
    `    "${host}": { ${username ? `username: ${username}, password: ${password}, ` : ''}insecure: true }`;
  return `  registries:\n${hosts.map(entry).join('\n')}`;
}

const scan = (t: TestApp, body: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/tarsier/v1/images', payload: body });

/** POST /tarsier/v1/images, which must answer 201; its images. */
async function scanned(t: TestApp, body: Record<string, unknown>): Promise<any[]> {
  const res = await scan(t, body);
  expect(res.statusCode, res.body).toBe(201);
  return json(res).Images;
}

/** GET /tarsier/v1/images with a query string, which must answer 200. */
async function list(t: TestApp, query = ''): Promise<{ Images: any[]; NextPage?: string }> {
  const res = await t.app.inject({ url: `/tarsier/v1/images${query}` });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}

/** The message of an error answer (the v1 envelope). */
const message = (res: { body: string }): string => json(res).Error.Message;

let scratch: string;
beforeAll(async () => void (scratch = await mkdtemp(join(tmpdir(), 'tarsier-images-'))));
afterAll(() => rm(scratch, { recursive: true, force: true }));

let layouts = 0;
/** Pushes an image (an array: a multi-platform index) as repository:tag; its layout and the digest the tag names. */
async function push(
  registry: Registry,
  repository: string,
  tag: string,
  images: ImageSpec | ImageSpec[],
): Promise<{ layout: OciLayout; digest: string }> {
  const layout = await ociLayout(join(scratch, `layout-${++layouts}`), images);
  return { layout, digest: await pushImage(registry, layout.dir, repository, tag) };
}

/** A small layer no other test pushes: an image of its own. */
const uniqueLayer = (name: string): Buffer => layer({ [`srv/${name}/app.js`]: `console.log(${JSON.stringify(name)})` });

/** debianLayer(9)'s status file with jq added: a layer that installs a package. */
const installsJq = (): Buffer =>
  layer({
    'var/lib/dpkg/status':
      readFileSync(new URL('../fixtures/dpkg/debian-9-stretch.status', import.meta.url), 'utf8').trimEnd() +
      '\n\nPackage: jq\nStatus: install ok installed\nVersion: 1.5+dfsg-1.3\nArchitecture: amd64\n',
  });

describe.skipIf(missing.length > 0)(`images from a registry with basic auth${skipped}`, () => {
  let registry: Registry;
  let t: TestApp;
  beforeAll(async () => {
    registry = await startRegistry({ auth: 'basic' });
    t = await testApp({ yaml: registriesYaml([registry]) });
    for (const v of [FIXABLE, UNFIXED, FIXED_BEFORE]) await addVulnerability(t, NAMESPACE, v);
  });
  afterAll(() => registry?.stop());

  it('scans a Debian image: its summary, each package with the layer that added it, and the images a vulnerability affects', async () => {
    const { layout, digest } = await push(registry, 'team/app', 'v1', { layers: [debianLayer(9), installsJq()] });
    const [base, jqLayer] = layout.images[0]!.layers.map((l) => l.digest);

    const images = await scanned(t, { reference: `${registry.host}/team/app:v1` });
    expect(images).toEqual([
      {
        Registry: registry.host,
        Repository: 'team/app',
        Digest: digest,
        Platform: 'linux/amd64',
        MediaType: 'application/vnd.oci.image.manifest.v1+json',
        Tags: ['v1'],
        FirstSeen: expect.any(String),
        LastSeen: expect.any(String),
        ScannedAt: expect.any(String),
        Summary: DEBIAN_9_SUMMARY,
        KnownExploited: 0,
        // The data the counts rest on: debian:9's records, written through the API.
        Data: {
          State: 'current',
          Namespaces: [
            {
              Name: NAMESPACE,
              State: 'current',
              UpdatedAt: expect.any(String),
              Sources: [{ Name: 'api', UpdatedAt: expect.any(String) }],
              ExpectedSources: ['debian'],
            },
          ],
        },
      },
    ]);

    const detail = await t.app.inject({ url: `/tarsier/v1/images/${digest}` });
    expect(detail.statusCode, detail.body).toBe(200);
    const image = json(detail).Image;
    expect(image).toMatchObject({
      Digest: digest,
      Layers: [base, jqLayer],
      References: [{ Registry: registry.host, Repository: 'team/app', Platform: 'linux/amd64', Tags: ['v1'] }],
      Summary: DEBIAN_9_SUMMARY,
      KnownExploited: 0,
      Data: { State: 'current', Namespaces: [expect.objectContaining({ Name: NAMESPACE, State: 'current' })] },
    });
    const packages = new Map<string, any>(image.Packages.map((p: any) => [p.Name, p]));
    expect(packages.get('bash')).toEqual({
      Name: 'bash',
      Version: '4.4-5',
      NamespaceName: NAMESPACE,
      VersionFormat: 'dpkg',
      AddedBy: base,
      Vulnerabilities: [
        {
          Name: FIXABLE.Name,
          NamespaceName: NAMESPACE,
          Description: 'CVE-2099-1001 in bash',
          Link: 'https://security-tracker.debian.org/tracker/CVE-2099-1001',
          Severity: 'High',
          FixedBy: '4.4-5+deb9u1',
          FixState: 'fixed',
        },
      ],
    });
    // No fix yet: no FixedBy at all (not an empty one).
    expect(packages.get('zlib')).toMatchObject({ Version: '1:1.2.8.dfsg-5', AddedBy: base });
    expect(packages.get('zlib').Vulnerabilities).toEqual([expect.objectContaining({ Name: UNFIXED.Name, Severity: 'Medium' })]);
    expect(packages.get('zlib').Vulnerabilities[0]).not.toHaveProperty('FixedBy');
    expect(packages.get('zlib').Vulnerabilities[0].FixState).toBe('affected');
    // jq came with the second layer; every other package with the base.
    expect(packages.get('jq')).toMatchObject({ Version: '1.5+dfsg-1.3', AddedBy: jqLayer, Vulnerabilities: [] });
    expect(image.Packages.filter((p: any) => p.AddedBy !== base).map((p: any) => p.Name)).toEqual(['jq']);
    expect(image.Packages.length).toBeGreaterThan(40);
    expect(image.Packages.flatMap((p: any) => p.Vulnerabilities.map((v: any) => v.Name)).sort()).toEqual([FIXABLE.Name, UNFIXED.Name]);

    const exposed = await t.app.inject({ url: `/tarsier/v1/vulnerabilities/${FIXABLE.Name}/images` });
    expect(exposed.statusCode, exposed.body).toBe(200);
    expect(json(exposed)).toEqual({
      Vulnerability: FIXABLE.Name,
      Images: [
        {
          Registry: registry.host,
          Repository: 'team/app',
          Digest: digest,
          Platform: 'linux/amd64',
          Tags: ['v1'],
          Packages: [{ Name: 'bash', Version: '4.4-5', NamespaceName: NAMESPACE, Severity: 'High', FixedBy: '4.4-5+deb9u1' }],
        },
      ],
    });
    const unfixed = json(await t.app.inject({ url: `/tarsier/v1/vulnerabilities/${UNFIXED.Name}/images` }));
    expect(unfixed.Images.map((i: any) => i.Packages)).toEqual([
      [{ Name: 'zlib', Version: '1:1.2.8.dfsg-5', NamespaceName: NAMESPACE, Severity: 'Medium' }],
    ]);
    // Known, affecting nothing here: an empty list; never heard of: 404.
    expect(json(await t.app.inject({ url: `/tarsier/v1/vulnerabilities/${FIXED_BEFORE.Name}/images` }))).toEqual({
      Vulnerability: FIXED_BEFORE.Name,
      Images: [],
    });
    const unknown = await t.app.inject({ url: '/tarsier/v1/vulnerabilities/CVE-2099-9999/images' });
    expect(unknown.statusCode).toBe(404);
    expect(message(unknown)).toContain('CVE-2099-9999');
  });

  it('scans a two-platform index as one image per platform, or only the platform asked for', async () => {
    const { layout, digest: indexDigest } = await push(registry, 'team/multi', 'v1', [
      { layers: [debianLayer(9), uniqueLayer('multi-amd64')] },
      { layers: [debianLayer(10)], platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } },
    ]);
    const [amd64, arm64] = layout.images;
    const reference = `${registry.host}/team/multi:v1`;
    const common = { Registry: registry.host, Repository: 'team/multi', IndexDigest: indexDigest, Tags: ['v1'] };
    // debian:10 packages, and no debian:10 data: the arm64 image's counts are unknown, never 0.
    const arm64Image = {
      ...common,
      Digest: arm64!.digest,
      Platform: 'linux/arm64/v8',
      Summary: null,
      KnownExploited: null,
      Data: { State: 'missing', Namespaces: [{ Name: 'debian:10', State: 'missing', Sources: [], ExpectedSources: ['debian'] }] },
    };

    expect(await scanned(t, { reference, platform: 'linux/arm64/v8' })).toEqual([expect.objectContaining(arm64Image)]);
    expect((await list(t, '?repository=team/multi')).Images).toEqual([expect.objectContaining(arm64Image)]);
    expect((await t.app.inject({ url: `/tarsier/v1/images/${amd64!.digest}` })).statusCode).toBe(404);

    const both = await scanned(t, { reference });
    expect(both).toHaveLength(2);
    expect(both).toEqual(
      expect.arrayContaining([
        expect.objectContaining(arm64Image),
        expect.objectContaining({ ...common, Digest: amd64!.digest, Platform: 'linux/amd64', Summary: DEBIAN_9_SUMMARY }),
      ]),
    );
    expect((await list(t, '?repository=team/multi')).Images.map((i) => i.Platform)).toEqual(['linux/arm64/v8', 'linux/amd64']);
    // Scanning one platform again leaves the other platform's image its tag.
    expect(await scanned(t, { reference, platform: 'linux/arm64' })).toEqual([expect.objectContaining(arm64Image)]);
    expect((await list(t, '?repository=team/multi')).Images.map((i) => [i.Platform, i.Tags])).toEqual([
      ['linux/arm64/v8', ['v1']],
      ['linux/amd64', ['v1']],
    ]);

    const none = await scan(t, { reference, platform: 'linux/s390x' });
    expect(none.statusCode).toBe(422);
    expect(message(none)).toContain('has no linux/s390x image: it has linux/amd64, linux/arm64/v8');
  });

  it('keeps the image a tag moved away from, untagged, and gives the tag to the new one', async () => {
    const first = await push(registry, 'team/moving', 'v1', { layers: [uniqueLayer('moving-1')] });
    expect((await scanned(t, { reference: `${registry.host}/team/moving:v1` })).map((i) => [i.Digest, i.Tags])).toEqual([
      [first.digest, ['v1']],
    ]);
    const second = await push(registry, 'team/moving', 'v1', { layers: [uniqueLayer('moving-2')] });
    expect(second.digest).not.toBe(first.digest);
    expect((await scanned(t, { reference: `${registry.host}/team/moving:v1` })).map((i) => [i.Digest, i.Tags])).toEqual([
      [second.digest, ['v1']],
    ]);

    expect((await list(t, '?repository=team/moving')).Images.map((i) => [i.Digest, i.Tags])).toEqual([
      [first.digest, []],
      [second.digest, ['v1']],
    ]);
    expect((await list(t, '?repository=team/moving&tag=v1')).Images.map((i) => i.Digest)).toEqual([second.digest]);
    const old = json(await t.app.inject({ url: `/tarsier/v1/images/${first.digest}` })).Image;
    expect(old.References).toEqual([expect.objectContaining({ Repository: 'team/moving', Tags: [] })]);
  });

  it('filters by repository, tag and severity, and pages with NextPage tokens that belong to their list', async () => {
    const fresh = await testApp({ yaml: registriesYaml([registry]) });
    for (const v of [FIXABLE, UNFIXED, FIXED_BEFORE]) await addVulnerability(fresh, NAMESPACE, v);
    const debian = await push(registry, 'paging/debian', 'v1', { layers: [debianLayer(9)] });
    const toolV1 = await push(registry, 'paging/tool', 'v1', { layers: [uniqueLayer('tool-1')] });
    const toolV2 = await push(registry, 'paging/tool', 'v2', { layers: [uniqueLayer('tool-2')] });
    for (const reference of ['paging/debian:v1', 'paging/tool:v1', 'paging/tool:v2']) {
      await scanned(fresh, { reference: `${registry.host}/${reference}` });
    }
    const digests = async (query: string) => (await list(fresh, query)).Images.map((i) => i.Digest);

    expect(await digests('')).toEqual([debian.digest, toolV1.digest, toolV2.digest]);
    expect(await digests('?repository=paging/tool')).toEqual([toolV1.digest, toolV2.digest]);
    expect(await digests('?tag=v1')).toEqual([debian.digest, toolV1.digest]);
    expect(await digests('?repository=paging/tool&tag=v2')).toEqual([toolV2.digest]);
    expect(await digests(`?registry=${registry.host}&digest=${toolV1.digest}`)).toEqual([toolV1.digest]);
    expect(await digests('?registry=elsewhere.example.com')).toEqual([]);
    // Only images a vulnerability at least this severe affects (FIXED_BEFORE, Critical, affects none).
    expect(await digests('?min_severity=Medium')).toEqual([debian.digest]);
    expect(await digests('?min_severity=High')).toEqual([debian.digest]);
    expect(await digests('?min_severity=Critical')).toEqual([]);

    // limit=1: one image a page, NextPage until the list is done, each image once.
    const paged: string[] = [];
    let page: { Images: any[]; NextPage?: string } = await list(fresh, '?limit=1');
    const tokens: string[] = [];
    for (let pages = 1; ; pages++) {
      expect(page.Images.length).toBeLessThanOrEqual(1);
      paged.push(...page.Images.map((i) => i.Digest));
      if (!page.NextPage) break;
      expect(pages, 'NextPage never ends').toBeLessThan(5);
      tokens.push(page.NextPage);
      page = await list(fresh, `?limit=1&page=${encodeURIComponent(page.NextPage)}`);
    }
    expect(paged).toEqual([debian.digest, toolV1.digest, toolV2.digest]);

    // A token of the repository=paging/tool list, or of another list altogether, is refused elsewhere.
    const toolPage = (await list(fresh, '?repository=paging/tool&limit=1')).NextPage!;
    expect((await list(fresh, `?repository=paging/tool&limit=1&page=${encodeURIComponent(toolPage)}`)).Images.map((i) => i.Digest)).toEqual(
      [toolV2.digest],
    );
    const exposedPage = json(await fresh.app.inject({ url: `/tarsier/v1/vulnerabilities/${FIXABLE.Name}/images?limit=1` })).NextPage;
    for (const [query, token] of [
      ['?limit=1', toolPage],
      ['?limit=1&repository=paging/debian', tokens[0]!],
      ['?limit=1', exposedPage],
    ] as const) {
      const res = await fresh.app.inject({ url: `/tarsier/v1/images${query}&page=${encodeURIComponent(token)}` });
      expect(res.statusCode, `${query} with ${token}`).toBe(400);
      expect(message(res)).toContain('start again from the first page');
    }
    const forged = await fresh.app.inject({ url: '/tarsier/v1/images?limit=1&page=not-a-token' });
    expect(forged.statusCode).toBe(400);
    expect(message(forged)).toContain('not a page token');
  });

  it('forgets an image the registry deleted when a scan finds it gone, with the tag that named it', async () => {
    const kept = await push(registry, 'team/vanishing', 'v1', { layers: [uniqueLayer('vanishing-1')] });
    const gone = await push(registry, 'team/vanishing', 'v2', { layers: [uniqueLayer('vanishing-2')] });
    await scanned(t, { reference: `${registry.host}/team/vanishing:v1` });
    await scanned(t, { reference: `${registry.host}/team/vanishing:v2` });
    expect((await list(t, '?repository=team/vanishing')).Images.map((i) => [i.Digest, i.Tags])).toEqual([
      [kept.digest, ['v1']],
      [gone.digest, ['v2']],
    ]);

    // Deleted at the registry, which tells Tarsier nothing: the next scan of it finds it gone.
    const authorization = `Basic ${Buffer.from(`${registry.username}:${registry.password}`).toString('base64')}`;
    const deleted = await fetch(`${registry.url}/v2/team/vanishing/manifests/${gone.digest}`, {
      method: 'DELETE',
      headers: { authorization },
    });
    expect(deleted.status).toBe(202);
    const res = await scan(t, { reference: `${registry.host}/team/vanishing@${gone.digest}` });
    expect(res.statusCode).toBe(422);
    expect(message(res)).toContain(`has no manifest ${registry.host}/team/vanishing@${gone.digest}`);
    expect((await list(t, '?repository=team/vanishing')).Images.map((i) => [i.Digest, i.Tags])).toEqual([[kept.digest, ['v1']]]);
    expect((await t.app.inject({ url: `/tarsier/v1/images/${gone.digest}` })).statusCode).toBe(404);
    const exposedTo = json(await t.app.inject({ url: `/tarsier/v1/vulnerabilities/${FIXABLE.Name}/images` })).Images;
    expect(exposedTo.map((i: any) => i.Digest)).not.toContain(gone.digest);
  });

  it('says data older than updater.maxdataage (default 120h) is stale, and keeps its counts: only missing data makes them unknown', async () => {
    const { digest } = await push(registry, 'team/aging', 'v1', { layers: [debianLayer(9), uniqueLayer('aging')] });
    await scanned(t, { reference: `${registry.host}/team/aging:v1` });
    const current = (await list(t, `?digest=${digest}`)).Images[0];
    expect(current.Data.State).toBe('current');
    // The API's records of debian:9, as if written six days ago.
    const age = async (interval: string) =>
      t.pool.query(`UPDATE vulnerability SET created_at = created_at + $1::interval WHERE updater IS NULL AND deleted_at IS NULL`, [
        interval,
      ]);
    await age('-6 days');
    try {
      const stale = {
        Summary: current.Summary,
        KnownExploited: current.KnownExploited,
        Data: { State: 'stale', Namespaces: [expect.objectContaining({ Name: NAMESPACE, State: 'stale' })] },
      };
      expect((await list(t, `?digest=${digest}`)).Images).toEqual([expect.objectContaining(stale)]);
      expect(json(await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image).toMatchObject(stale);
      expect(current.Summary).not.toEqual({});
    } finally {
      await age('6 days');
    }
  });

  it('answers 400 for an invalid reference, 422 for a tag the registry does not have, 422 naming clair.registries without credentials', async () => {
    const invalid = await scan(t, { reference: `${registry.host}/Team/App:v1` });
    expect(invalid.statusCode).toBe(400);
    expect(message(invalid)).toContain(`image reference "${registry.host}/Team/App:v1" has a repository that is not lowercase`);
    const badTag = await scan(t, { reference: `${registry.host}/team/app:-v1` });
    expect(badTag.statusCode).toBe(400);
    expect(message(badTag)).toContain('has a tag that is not');

    const failedBefore = (await t.metrics.imageScans.get()).values.find((v) => v.labels.outcome === 'failed')?.value ?? 0;
    const missingTag = await scan(t, { reference: `${registry.host}/team/app:no-such-tag` });
    expect(missingTag.statusCode).toBe(422);
    expect(message(missingTag)).toContain(`has no manifest ${registry.host}/team/app:no-such-tag`);
    // A scan the API answered with an error counts as failed, not only one the queue gave up on.
    expect((await t.metrics.imageScans.get()).values.find((v) => v.labels.outcome === 'failed')?.value).toBe(failedBefore + 1);

    await push(registry, 'team/private', 'v1', { layers: [uniqueLayer('private')] });
    const anonymous = await testApp();
    const refused = await scan(anonymous, { reference: `${registry.host}/team/private:v1`, insecure: true });
    expect(refused.statusCode).toBe(422);
    expect(message(refused)).toContain(`it needs credentials: configure clair.registries."${registry.host}"`);
    expect((await list(anonymous)).Images).toEqual([]);
  });
});

describe.skipIf(missing.length > 0)(`layer downloads from a registry${skipped}`, () => {
  let registry: Registry;
  /** Counts blob downloads; can hold one blob's answer (held) until released. */
  let counting: RegistryProxy;
  /** Flips a byte in the middle of the blob named corrupted. */
  let corrupting: RegistryProxy;
  let held: { digest: string; release: () => void; released: Promise<void> } | undefined;
  let corrupted: string | undefined;
  let t: TestApp;
  beforeAll(async () => {
    registry = await startRegistry();
    counting = await startRegistryProxy(registry, {
      blob: async (blob, body) => {
        if (held && blob.digest === held.digest) await held.released;
        return body;
      },
    });
    corrupting = await startRegistryProxy(registry, {
      blob: (blob, body) => {
        if (blob.digest !== corrupted) return body;
        const flipped = Buffer.from(body);
        const middle = flipped.length >> 1;
        flipped[middle] = flipped[middle]! ^ 0xff;
        return flipped;
      },
    });
    t = await testApp({ yaml: registriesYaml([counting, corrupting]) });
  });
  afterAll(async () => {
    await counting?.close();
    await corrupting?.close();
    await registry?.stop();
  });

  const layerDigests = (layout: OciLayout) => layout.images.flatMap((i) => i.layers.map((l) => l.digest));
  /** Downloads of these layers through the counting proxy so far. */
  const downloads = (digests: string[]) => Object.fromEntries(digests.map((d) => [d, counting.blobGetsOf(d)]));

  it('downloads a layer once, whichever images and platforms share it', async () => {
    const base = layer({ 'etc/os-release': 'ID=debian\nVERSION_ID="9"\n', 'srv/shared/base': 'shared' });
    const one = await push(registry, 'shared/one', 'v1', { layers: [base, uniqueLayer('one')] });
    const two = await push(registry, 'shared/two', 'v1', { layers: [base, uniqueLayer('two')] });
    const index = await push(registry, 'shared/multi', 'v1', [
      { layers: [base, uniqueLayer('multi-amd64')] },
      { layers: [base, uniqueLayer('multi-arm64')], platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } },
    ]);
    const baseDigest = sha256(base);
    const all = [...new Set([...layerDigests(one.layout), ...layerDigests(two.layout), ...layerDigests(index.layout)])];
    expect(all).toHaveLength(5);

    await scanned(t, { reference: `${counting.host}/shared/one:v1` });
    await scanned(t, { reference: `${counting.host}/shared/two:v1` });
    expect(await scanned(t, { reference: `${counting.host}/shared/multi:v1` })).toHaveLength(2);
    // Scanning again downloads nothing.
    await scanned(t, { reference: `${counting.host}/shared/one:v1` });
    expect(downloads(all)).toEqual(Object.fromEntries(all.map((d) => [d, 1])));
    expect(counting.blobGetsOf(baseDigest)).toBe(1);
  });

  it('downloads a layer once for two scans that need it at the same time', async () => {
    const base = uniqueLayer('concurrent-base');
    const three = await push(registry, 'shared/three', 'v1', { layers: [base, uniqueLayer('three')] });
    const four = await push(registry, 'shared/four', 'v1', { layers: [base, uniqueLayer('four')] });
    let release!: () => void;
    held = { digest: sha256(base), release: () => release(), released: new Promise<void>((resolve) => (release = resolve)) };
    try {
      const scans = [scan(t, { reference: `${counting.host}/shared/three:v1` }), scan(t, { reference: `${counting.host}/shared/four:v1` })];
      // Both scans are at their layers (their own layer downloaded) while the shared one is held.
      const own = [three, four].map((p) => p.layout.images[0]!.layers[1]!.digest);
      await expect.poll(() => own.map((d) => counting.blobGetsOf(d)), { timeout: 10_000 }).toEqual([1, 1]);
      held.release();
      for (const res of await Promise.all(scans)) expect(res.statusCode, res.body).toBe(201);
      expect(counting.blobGetsOf(sha256(base))).toBe(1);
    } finally {
      held.release();
      held = undefined;
    }
  });

  it('gives a tag moved during a scan by tag to no image it scanned: the registry has moved it on', async () => {
    const mine = uniqueLayer('moved-during-scan-1');
    const first = await push(registry, 'moved/app', 'v1', { layers: [mine] });
    let release!: () => void;
    held = { digest: sha256(mine), release: () => release(), released: new Promise<void>((resolve) => (release = resolve)) };
    try {
      const scanning = scan(t, { reference: `${counting.host}/moved/app:v1` });
      await expect.poll(() => counting.blobGetsOf(sha256(mine)), { timeout: 10_000 }).toBe(1);
      const second = await push(registry, 'moved/app', 'v1', { layers: [uniqueLayer('moved-during-scan-2')] });
      held.release();
      const res = await scanning;
      expect(res.statusCode, res.body).toBe(201);
      expect(json(res).Images.map((i: any) => [i.Digest, i.Tags])).toEqual([[first.digest, []]]);

      // The next scan of the tag finds the image it names now.
      expect((await scanned(t, { reference: `${counting.host}/moved/app:v1` })).map((i) => [i.Digest, i.Tags])).toEqual([
        [second.digest, ['v1']],
      ]);
    } finally {
      held.release();
      held = undefined;
    }
  });

  it('refuses a layer whose bytes do not have its digest, naming the layer, and stores nothing', async () => {
    const bad = uniqueLayer('corrupted');
    const pushed = await push(registry, 'broken/app', 'v1', { layers: [bad] });
    corrupted = sha256(bad);

    const res = await scan(t, { reference: `${corrupting.host}/broken/app:v1` });
    expect(res.statusCode, res.body).toBe(400);
    expect(message(res)).toContain(`layer ${corrupted}: the bytes received have the digest sha256:`);
    expect(corrupting.blobGetsOf(corrupted)).toBe(1);

    const count = async (sql: string, value: string) => (await t.pool.query(sql, [value])).rowCount;
    expect(await count('SELECT 1 FROM image WHERE repository = $1', 'broken/app')).toBe(0);
    expect(await count('SELECT 1 FROM layer_scan WHERE key = $1', corrupted)).toBe(0);
    expect(await count('SELECT 1 FROM ancestry WHERE name = $1', pushed.digest)).toBe(0);
    expect((await list(t, '?repository=broken/app')).Images).toEqual([]);

    // Nothing was poisoned: the right bytes scan.
    expect((await scanned(t, { reference: `${counting.host}/broken/app:v1` })).map((i) => i.Digest)).toEqual([pushed.digest]);
  });
});

describe('layer uploads (PUT /tarsier/v1/layers/:digest) and the ancestry API', () => {
  let t: TestApp;
  beforeAll(async () => void (t = await testApp()));

  const put = (digest: string, body: Buffer) =>
    t.app.inject({
      method: 'PUT',
      url: `/tarsier/v1/layers/${digest}`,
      payload: body,
      headers: { 'content-type': 'application/octet-stream' },
    });
  const head = async (digest: string) => (await t.app.inject({ method: 'HEAD', url: `/tarsier/v1/layers/${digest}` })).statusCode;
  const scans = async (digest: string) => (await t.pool.query('SELECT 1 FROM layer_scan WHERE key = $1', [digest])).rowCount;

  it('scans an uploaded layer once, refuses bytes of another digest, and lets an ancestry use the upload without a path', async () => {
    const debian = debianLayer(9);
    const digest = sha256(debian);
    expect(await head(digest)).toBe(404);

    const uploaded = await put(digest, debian);
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    expect(json(uploaded)).toEqual({ Layer: { Digest: digest, NamespaceName: NAMESPACE, IndexedByVersion: expect.any(Number) } });
    expect(await head(digest)).toBe(200);
    expect((await put(digest, debian)).statusCode).toBe(200);

    const other = uniqueLayer('not-these-bytes');
    const wrong = sha256(other);
    const refused = await put(wrong, debian);
    expect(refused.statusCode).toBe(400);
    expect(message(refused)).toBe(`layer ${wrong}: the bytes received have the digest ${digest}; nothing was stored`);
    expect(await head(wrong)).toBe(404);
    expect(await scans(wrong)).toBe(0);

    const ancestry = await t.app.inject({
      method: 'POST',
      url: '/ancestry',
      payload: { ancestry_name: 'uploaded-image', format: 'Docker', layers: [{ hash: digest }] },
    });
    expect(ancestry.statusCode, ancestry.body).toBe(200);
    const got = json(await t.app.inject({ url: '/ancestry/uploaded-image' })).ancestry;
    expect(got.layers).toHaveLength(1);
    expect(got.layers[0].layer.hash).toBe(digest);
    const features = got.layers[0].detected_features.map((f: any) => `${f.name} ${f.version} ${f.namespace_name}`);
    expect(features).toEqual(expect.arrayContaining(['bash 4.4-5 debian:9', 'zlib 1:1.2.8.dfsg-5 debian:9']));

    const never = await t.app.inject({
      method: 'POST',
      url: '/ancestry',
      payload: { ancestry_name: 'not-uploaded', format: 'Docker', layers: [{ hash: digest }, { hash: wrong }] },
    });
    expect(never.statusCode).toBe(400);
    expect(never.body).toContain(`layers[1].path is required: the layer ${wrong} has not been scanned before`);
    expect((await t.app.inject({ url: '/ancestry/not-uploaded' })).statusCode).toBe(404);
  });
});

/**
 * The images view of what changed: a vulnerability change names the images (repository, tags) it
 * affects before and after, paged; and images a moved tag left behind go after their retention,
 * their contents with them, while tagged ones stay. Real registry, real pushes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImageRetention } from '../../src/images/retention.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { silentLog } from '../helpers/db.js';
import { debianLayer, layer, ociLayout, pushImage } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../helpers/registry.js';

const missing = missingRegistryPrograms();

describe.skipIf(missing.length > 0)('images in notifications and image retention (needs docker-registry and skopeo)', () => {
  let registry: Registry;
  let t: TestApp;
  let scratch: string;
  const digests: Record<string, string> = {};

  /** Pushes a Debian 9 image with one extra file (so each has its own digest) and scans it. */
  async function pushAndScan(repository: string, tag: string, marker: string): Promise<string> {
    const image = await ociLayout(join(scratch, `${repository.replace('/', '-')}-${marker}`), {
      layers: [debianLayer(9), layer({ [`srv/${marker}`]: marker })],
    });
    await pushImage(registry, image.dir, repository, tag);
    const res = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/images',
      payload: { reference: `${registry.host}/${repository}:${tag}` },
    });
    expect(res.statusCode, res.body).toBe(201);
    return json(res).Images[0].Digest;
  }

  /** POST creates the vulnerability (bash fixed in 4.4-6: every image has 4.4-5); PUT changes its severity only. */
  async function putVulnerability(method: 'POST' | 'PUT', severity: string) {
    const res = await t.app.inject({
      method,
      url: method === 'POST' ? '/v1/namespaces/debian%3A9/vulnerabilities' : '/v1/namespaces/debian%3A9/vulnerabilities/CVE-2026-0001',
      payload: {
        Vulnerability: {
          Name: 'CVE-2026-0001',
          Severity: severity,
          ...(method === 'POST' ? { FixedIn: [{ Name: 'bash', Version: '4.4-6' }] } : {}),
        },
      },
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
  }

  const notificationNames = async () =>
    (await t.pool.query<{ name: string }>('SELECT name FROM notification ORDER BY id')).rows.map((r) => r.name);

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tarsier-image-notifications-'));
    registry = await startRegistry({ auth: 'basic' });
    t = await testApp({
      yaml: `  registries:\n    "${registry.host}": { username: ${registry.username}, password: ${registry.password}, insecure: true }`,
    });
    await putVulnerability('POST', 'Medium');
    digests.a = await pushAndScan('team/a', 'v1', 'a');
    digests.b = await pushAndScan('team/b', 'v1', 'b');
    digests.c = await pushAndScan('team/c', 'v1', 'c');
  });
  afterAll(async () => {
    await registry?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('names the images a change affects on both sides, with their tags, paged over both', async () => {
    await putVulnerability('PUT', 'High');
    const name = (await notificationNames()).at(-1)!;
    const first = json(await t.app.inject({ url: `/tarsier/v1/notifications/${name}?limit=2` })).Notification;
    expect(first.Old.Vulnerability).toMatchObject({ Name: 'CVE-2026-0001', Severity: 'Medium', NamespaceName: 'debian:9' });
    expect(first.New.Vulnerability.Severity).toBe('High');
    expect(first.Old.Images.map((i: { Repository: string; Tags: string[] }) => `${i.Repository}:${i.Tags.join(',')}`)).toEqual([
      'team/a:v1',
      'team/b:v1',
    ]);
    expect(first.Old.Images[0]).toMatchObject({ Registry: registry.host, Digest: digests.a, Platform: 'linux/amd64' });
    expect(first.New.Images.map((i: { Digest: string }) => i.Digest)).toEqual([digests.a, digests.b]);
    const second = json(
      await t.app.inject({ url: `/tarsier/v1/notifications/${name}?limit=2&page=${encodeURIComponent(first.NextPage)}` }),
    );
    expect(second.Notification.Old.Images.map((i: { Digest: string }) => i.Digest)).toEqual([digests.c]);
    expect(second.Notification.New.Images.map((i: { Digest: string }) => i.Digest)).toEqual([digests.c]);
    expect(second.Notification.NextPage).toBeUndefined();
    // The v1 route still marks it read; this view does not.
    expect(first.Deleted).toBeUndefined();
  });

  it('refuses a page token of another notification, and answers 404 for an unknown one', async () => {
    const [created, changed] = await notificationNames();
    const page = json(await t.app.inject({ url: `/tarsier/v1/notifications/${changed}?limit=1` })).Notification.NextPage;
    const wrong = await t.app.inject({ url: `/tarsier/v1/notifications/${created}?page=${encodeURIComponent(page)}` });
    expect(wrong.statusCode).toBe(400);
    expect(json(wrong).Error.Message).toMatch(/token of another list/);
    const unknown = await t.app.inject({ url: '/tarsier/v1/notifications/no-such-notification' });
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown)).toEqual({ Error: { Message: 'notification no-such-notification is not known' } });
  });

  it('keeps an image a moved tag left behind until its retention passes, then deletes it and its contents', async () => {
    const moved = await pushAndScan('team/a', 'v1', 'a2');
    const images = json(await t.app.inject({ url: '/tarsier/v1/images?repository=team/a' })).Images;
    expect(images.map((i: { Digest: string; Tags: string[] }) => [i.Digest, i.Tags])).toEqual([
      [digests.a, []],
      [moved, ['v1']],
    ]);
    // Within the retention nothing goes; with none left (retention 1 ms, the image seen before) it does.
    expect(await new ImageRetention({ pool: t.pool, retentionMs: 3_600_000, log: silentLog }).purge()).toBe(0);
    expect(await new ImageRetention({ pool: t.pool, retentionMs: 1, log: silentLog }).purge()).toBe(1);
    const after = json(await t.app.inject({ url: '/tarsier/v1/images?repository=team/a' })).Images;
    expect(after.map((i: { Digest: string }) => i.Digest)).toEqual([moved]);
    expect((await t.app.inject({ url: `/tarsier/v1/images/${digests.a}` })).statusCode).toBe(404);
    expect((await t.pool.query('SELECT 1 FROM ancestry WHERE name = $1', [digests.a])).rowCount).toBe(0);
    // Tagged images are never purged.
    expect((await t.app.inject({ url: `/tarsier/v1/images/${digests.b}` })).statusCode).toBe(200);
  });

  it('deletes an image in every repository, with its contents, and then knows it no more', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: `/tarsier/v1/images/${digests.c}` });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ Deleted: 1 });
    expect((await t.app.inject({ url: `/tarsier/v1/images/${digests.c}` })).statusCode).toBe(404);
    expect((await t.pool.query('SELECT 1 FROM ancestry WHERE name = $1', [digests.c])).rowCount).toBe(0);
    const again = await t.app.inject({ method: 'DELETE', url: `/tarsier/v1/images/${digests.c}` });
    expect(again.statusCode).toBe(404);
    expect(json(again)).toEqual({ Error: { Message: `image ${digests.c} is not known` } });
    expect((await t.app.inject({ url: `/tarsier/v1/images/${digests.b}` })).statusCode).toBe(200);
  });
});

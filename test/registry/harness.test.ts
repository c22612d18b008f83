/**
 * The registry harness against the real thing (distribution's docker-registry, skopeo): what
 * pushImage puts there reads back over HTTP, byte for byte where the layout said, only with the
 * credentials, and the registry tells a webhook; a token registry runs the Docker token flow.
 * Runs where the programs are installed (CI installs them); elsewhere it is skipped.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debianLayer, layer, OCI_MEDIA_TYPES, ociLayout, pushImage } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../helpers/registry.js';

const missing = missingRegistryPrograms();
const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';

const basic = (registry: Registry) => `Basic ${Buffer.from(`${registry.username}:${registry.password}`).toString('base64')}`;

/** GET of a registry path; the answer's status, Docker-Content-Digest and body. */
async function get(registry: Registry, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${registry.url}${path}`, { headers });
  return {
    status: res.status,
    digest: res.headers.get('docker-content-digest'),
    headers: res.headers,
    body: Buffer.from(await res.arrayBuffer()),
  };
}

/** A webhook receiver: every event the registry posts, and a promise of the first that matches. */
async function webhook() {
  const received: Array<{ event: any; headers: IncomingHttpHeaders }> = [];
  const waiting: Array<{ match: (event: any) => boolean; resolve: (delivery: (typeof received)[number]) => void }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      for (const event of JSON.parse(body).events) {
        const delivery = { event, headers: req.headers };
        received.push(delivery);
        for (const waiter of waiting.filter((w) => w.match(event))) waiter.resolve(delivery);
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    event: (match: (event: any) => boolean) =>
      new Promise<(typeof received)[number]>((resolve) => {
        const seen = received.find((delivery) => match(delivery.event));
        if (seen) resolve(seen);
        else waiting.push({ match, resolve });
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(missing.length > 0)(`a real registry${missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : ''}`, () => {
  let scratch: string;
  beforeAll(async () => void (scratch = await mkdtemp(join(tmpdir(), 'tarsier-harness-'))));
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  describe('with basic auth and a webhook', () => {
    let registry: Registry;
    let hook: Awaited<ReturnType<typeof webhook>>;
    beforeAll(async () => {
      hook = await webhook();
      registry = await startRegistry({
        auth: 'basic',
        notifications: { url: hook.url, headers: { Authorization: ['Bearer hook-secret'] } },
      });
    });
    afterAll(async () => {
      await registry?.stop();
      await hook?.close();
    });

    it('serves a pushed image as the layout wrote it, to the account only, and posts the push to the webhook', async () => {
      const base = debianLayer();
      const image = await ociLayout(join(scratch, 'app'), { layers: [base, layer({ 'srv/app/server.js': 'listen(8080)' })] });
      const digest = await pushImage(registry, image.dir, 'team/app', 'v1');
      expect(digest).toBe(image.digest);

      expect((await get(registry, '/v2/team/app/manifests/v1')).status).toBe(401);
      const manifest = await get(registry, '/v2/team/app/manifests/v1', {
        authorization: basic(registry),
        accept: OCI_MEDIA_TYPES.manifest,
      });
      expect(manifest.status).toBe(200);
      expect(manifest.digest).toBe(image.digest);
      const { config, layers } = JSON.parse(manifest.body.toString());
      expect(layers.map((l: any) => l.digest)).toEqual(image.images[0]!.layers.map((l) => l.digest));
      const imageConfig = JSON.parse(
        (await get(registry, `/v2/team/app/blobs/${config.digest}`, { authorization: basic(registry) })).body.toString(),
      );
      expect(imageConfig).toMatchObject({ os: 'linux', architecture: 'amd64', rootfs: { type: 'layers' } });
      expect(imageConfig.rootfs.diff_ids[0]).toBe(`sha256:${createHash('sha256').update(gunzipSync(base)).digest('hex')}`);
      const baseBlob = await get(registry, `/v2/team/app/blobs/${layers[0].digest}`, { authorization: basic(registry) });
      expect(gunzipSync(baseBlob.body).toString('latin1')).toContain('Package: libc6');

      const pushed = await hook.event((e) => e.action === 'push' && e.target.tag === 'v1' && e.target.repository === 'team/app');
      expect(pushed.event.target).toMatchObject({ mediaType: OCI_MEDIA_TYPES.manifest, digest: image.digest });
      expect(pushed.event.actor.name).toBe(registry.username);
      expect(pushed.headers.authorization).toBe('Bearer hook-secret');
    });

    it('serves a pushed two-platform image as an index of its platform manifests', async () => {
      const image = await ociLayout(join(scratch, 'multi'), [
        { layers: [debianLayer(9)] },
        { layers: [debianLayer(10)], platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } },
      ]);
      expect(await pushImage(registry, image.dir, 'team/multi', 'latest')).toBe(image.index!.digest);

      const index = await get(registry, '/v2/team/multi/manifests/latest', {
        authorization: basic(registry),
        accept: OCI_MEDIA_TYPES.index,
      });
      expect(index.digest).toBe(image.index!.digest);
      const listed = JSON.parse(index.body.toString()).manifests;
      expect(listed.map((m: any) => [m.digest, m.platform])).toEqual(image.images.map((i) => [i.digest, i.platform]));
      for (const platform of image.images) {
        const manifest = await get(registry, `/v2/team/multi/manifests/${platform.digest}`, {
          authorization: basic(registry),
          accept: OCI_MEDIA_TYPES.manifest,
        });
        expect(manifest.status, platform.platform.architecture).toBe(200);
      }
    });

    it('pushes a Docker schema 2 manifest when asked to', async () => {
      const image = await ociLayout(join(scratch, 'docker'), { layers: [debianLayer()] });
      const digest = await pushImage(registry, image.dir, 'team/docker', 'v1', { format: 'v2s2' });
      const manifest = await get(registry, '/v2/team/docker/manifests/v1', { authorization: basic(registry), accept: DOCKER_MANIFEST });
      expect(manifest.digest).toBe(digest);
      expect(JSON.parse(manifest.body.toString()).mediaType).toBe(DOCKER_MANIFEST);
    });
  });

  describe('with token auth', () => {
    let registry: Registry;
    beforeAll(async () => void (registry = await startRegistry({ auth: 'token' })));
    afterAll(() => registry?.stop());

    it('refuses anonymous clients, and serves a token holder what its token grants', async () => {
      const image = await ociLayout(join(scratch, 'token'), { layers: [debianLayer()] });
      const digest = await pushImage(registry, image.dir, 'team/app', 'v1');
      // skopeo followed the challenge: it asked the token server, as the account, for push access.
      expect(registry.tokenRequests).toContainEqual(
        expect.objectContaining({ username: registry.username, scopes: ['repository:team/app:pull,push'], status: 200 }),
      );

      const challenge = (await get(registry, '/v2/')).headers.get('www-authenticate') ?? '';
      const realm = /realm="([^"]+)"/.exec(challenge)?.[1];
      const service = /service="([^"]+)"/.exec(challenge)?.[1];
      expect(challenge).toMatch(/^Bearer /);
      const token = async (authorization?: string) => {
        const res = await fetch(`${realm}?service=${service}&scope=repository:team/app:pull`, {
          headers: authorization ? { authorization } : {},
        });
        return { status: res.status, token: res.ok ? ((await res.json()) as { token: string }).token : undefined };
      };
      const manifestWith = async (bearer: string | undefined) =>
        get(registry, '/v2/team/app/manifests/v1', { authorization: `Bearer ${bearer}`, accept: OCI_MEDIA_TYPES.manifest });

      const anonymous = await token();
      expect(anonymous.status).toBe(200);
      expect((await manifestWith(anonymous.token)).status).toBe(401);
      expect((await token(`Basic ${Buffer.from(`${registry.username}:wrong`).toString('base64')}`)).status).toBe(401);
      const pulled = await manifestWith((await token(basic(registry))).token);
      expect(pulled.status).toBe(200);
      expect(pulled.digest).toBe(digest);
    });
  });
});

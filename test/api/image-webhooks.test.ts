/**
 * Image scans that run later: a real registry's notifications (Docker Distribution webhook)
 * reaching a listening app, `POST /tarsier/v1/images?wait=false`, and the durable queue across
 * restarts — a scan queued while no worker runs, and a scan whose worker process is killed in the
 * middle of a layer download. What the user sees is the image appearing in GET /tarsier/v1/images,
 * its tag on the image the registry last pointed it at whichever scan ends last, and the images the
 * registry deletes (Distribution's delete events, Harbor's DELETE_ARTIFACT) leaving every answer.
 * Runs where the registry programs are installed (CI installs them).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/pool.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { freshDatabase, silentLog } from '../helpers/db.js';
import { debianLayer, layer, ociLayout, pushImage, type OciLayout } from '../helpers/oci-image.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';
import { databaseUrl, startTarsier } from '../helpers/process.js';
import {
  distributionPushEvent,
  missingRegistryPrograms,
  startRegistry,
  startRegistryProxy,
  type Registry,
  type RegistryProxy,
} from '../helpers/registry.js';
import { whenDone } from '../helpers/when-done.js';

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : '';

const SECRET = 'Bearer s3cret';
const WEBHOOKS_YAML = `  webhooks:\n    secret: "${SECRET}"`;
/** How long a queued scan may take to show up (a webhook delivery, a worker's poll, a scan). */
const APPEARS_MS = 20_000;

let scratch: string;
beforeAll(async () => void (scratch = await mkdtemp(join(tmpdir(), 'tarsier-image-queue-'))));
afterAll(() => rm(scratch, { recursive: true, force: true }));

let layouts = 0;
/** Pushes a one-platform image whose top layer is its own; the digest the tag names. */
async function push(registry: Registry, repository: string, tag: string): Promise<string> {
  const own = layer({ [`srv/${repository}/${tag}`]: `${repository}:${tag} ${++layouts}` });
  const layout = await ociLayout(join(scratch, `layout-${layouts}`), { layers: [debianLayer(9), own] });
  return pushImage(registry, layout.dir, repository, tag);
}

/** The images of a repository as [digest, tags], from GET /tarsier/v1/images, in the order they were first recorded. */
async function imagesOf(t: TestApp, repository: string): Promise<Array<[string, string[]]>> {
  const res = await t.app.inject({ url: `/tarsier/v1/images?repository=${encodeURIComponent(repository)}` });
  expect(res.statusCode, res.body).toBe(200);
  return json(res).Images.map((i: any) => [i.Digest, i.Tags]);
}

/** [digest, tags] rows by digest: which scan was recorded first does not matter. */
const byDigest = (rows: Array<[string, string[]]>): Array<[string, string[]]> => [...rows].sort(([a], [b]) => a.localeCompare(b));

/** imagesOf, by digest. */
const imagesByDigest = async (t: TestApp, repository: string) => byDigest(await imagesOf(t, repository));

/** Fixed in a later bash than debianLayer(9)'s 4.4-5: affects every image pushed here. */
const BASH = { Name: 'CVE-2099-2001', Severity: 'High', FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }] };

/** GET /tarsier/v1/vulnerabilities/{BASH}/images: the images it affects, as repository@digest. */
async function exposed(t: TestApp): Promise<string[]> {
  const res = await t.app.inject({ url: `/tarsier/v1/vulnerabilities/${BASH.Name}/images` });
  expect(res.statusCode, res.body).toBe(200);
  return json(res).Images.map((i: any) => `${i.Repository}@${i.Digest}`);
}

/** A proxy in front of the registry whose blob answers wait while held. */
async function holdingProxy(registry: Registry) {
  let holding: { arrived: () => void; released: Promise<void> } | undefined;
  const proxy = await startRegistryProxy(registry, {
    blob: async (_blob, body) => {
      if (holding) {
        holding.arrived();
        await holding.released;
      }
      return body;
    },
  });
  return {
    proxy,
    /** Holds blob downloads through the proxy; downloading resolves once one is held. */
    hold(): { downloading: Promise<void>; release: () => void } {
      let arrived!: () => void;
      const downloading = new Promise<void>((resolve) => (arrived = resolve));
      let release!: () => void;
      holding = { arrived, released: new Promise<void>((resolve) => (release = resolve)) };
      return {
        downloading,
        release: () => {
          holding = undefined;
          release();
        },
      };
    },
  };
}

const webhook = (t: TestApp, body: unknown, headers: Record<string, string>, path = 'distribution') =>
  t.app.inject({
    method: 'POST',
    url: `/tarsier/v1/webhooks/${path}`,
    payload: body as Record<string, unknown>,
    headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', ...headers },
  });

describe.skipIf(missing.length > 0)(`registry webhooks and queued scans${skipped}`, () => {
  let registry: Registry;
  /** Listens on a real port, runs the queue, takes the registry's notifications. */
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ imageQueue: true, yaml: WEBHOOKS_YAML });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    // An open registry: the queued scan pulls over plain HTTP because the event's URL says so.
    registry = await startRegistry({
      notifications: { url: `http://127.0.0.1:${port}/tarsier/v1/webhooks/distribution`, headers: { Authorization: [SECRET] } },
    });
  });
  afterAll(() => registry?.stop());

  it('scans what is pushed to the registry: its notification queues the scan and the image appears', async () => {
    const digest = await push(registry, 'hooked/app', 'v1');
    await expect.poll(() => imagesOf(t, 'hooked/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[digest, ['v1']]]);
    const image = json(await t.app.inject({ url: `/tarsier/v1/images?digest=${digest}` })).Images[0];
    expect(image).toMatchObject({ Registry: registry.host, Platform: 'linux/amd64' });
    expect(image.ScannedAt).toEqual(expect.any(String));
    expect(json(await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image.Packages.length).toBeGreaterThan(40);

    // A second push to the same tag moves it.
    const next = await push(registry, 'hooked/app', 'v1');
    await expect
      .poll(() => imagesOf(t, 'hooked/app'), { timeout: APPEARS_MS, interval: 200 })
      .toEqual([
        [digest, []],
        [next, ['v1']],
      ]);
  });

  it('with ?wait=false, answers 202 with the job at once, and the queue scans the image', async () => {
    const digest = await push(registry, 'queued/app', 'v1');
    const res = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/images?wait=false',
      payload: { reference: `${registry.host}/queued/app:v1`, insecure: true },
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(json(res)).toEqual({ Job: expect.stringMatching(/^\d+$/) });
    await expect.poll(() => imagesOf(t, 'queued/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[digest, ['v1']]]);
  });

  it('forgets what the registry deletes: the image leaves the lists and the vulnerability answer; the same image elsewhere stays', async () => {
    await addVulnerability(t, 'debian:9', BASH);
    const own = layer({ 'srv/deleted/app.js': 'deleted' });
    const layout = await ociLayout(join(scratch, `layout-${++layouts}`), { layers: [debianLayer(9), own] });
    const digest = await pushImage(registry, layout.dir, 'deleted/app', 'v1');
    expect(await pushImage(registry, layout.dir, 'kept/app', 'v1')).toBe(digest);
    await expect.poll(() => imagesOf(t, 'deleted/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[digest, ['v1']]]);
    await expect.poll(() => imagesOf(t, 'kept/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[digest, ['v1']]]);
    expect(await exposed(t)).toEqual(expect.arrayContaining([`deleted/app@${digest}`, `kept/app@${digest}`]));

    // The registry deletes the manifest (and with it the tag): its events reach the webhook.
    const deleted = await fetch(`${registry.url}/v2/deleted/app/manifests/${digest}`, { method: 'DELETE' });
    expect(deleted.status).toBe(202);
    await expect.poll(() => imagesOf(t, 'deleted/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([]);
    expect(await exposed(t)).not.toContain(`deleted/app@${digest}`);
    expect(await exposed(t)).toContain(`kept/app@${digest}`);
    expect(json(await t.app.inject({ url: `/tarsier/v1/images?tag=v1&digest=${digest}` })).Images.map((i: any) => i.Repository)).toEqual([
      'kept/app',
    ]);
    const detail = await t.app.inject({ url: `/tarsier/v1/images/${digest}` });
    expect(detail.statusCode, detail.body).toBe(200);
    expect(json(detail).Image.References.map((r: any) => r.Repository)).toEqual(['kept/app']);

    // Deleted from its last repository too: nothing of it is left (its contents went with it).
    expect((await fetch(`${registry.url}/v2/kept/app/manifests/${digest}`, { method: 'DELETE' })).status).toBe(202);
    await expect.poll(() => imagesOf(t, 'kept/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([]);
    expect(await exposed(t)).not.toContain(`kept/app@${digest}`);
    expect((await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).statusCode).toBe(404);
  });

  it('queues nothing for a wrong or missing secret (401), and answers 404 when no secret is configured', async () => {
    // No worker runs here, so whatever is queued stays to be counted.
    const idle = await testApp({ yaml: WEBHOOKS_YAML });
    const event = distributionPushEvent(registry.host, 'hooked/app', `sha256:${'a'.repeat(64)}`, 'v9');
    for (const headers of [{ authorization: 'Bearer wrong' }, { authorization: `${SECRET} ` }, {}] as Array<Record<string, string>>) {
      const refused = await webhook(idle, event, headers);
      expect(refused.statusCode, JSON.stringify(headers)).toBe(401);
      expect(json(refused).Error.Message).toContain('clair.webhooks.secret');
    }
    expect(await idle.images.queue.depth()).toEqual({ waiting: 0, running: 0 });

    const accepted = await webhook(idle, event, { authorization: SECRET });
    expect(accepted.statusCode, accepted.body).toBe(202);
    expect(json(accepted)).toEqual({
      Queued: [{ Reference: `${registry.host}/hooked/app:v9@sha256:${'a'.repeat(64)}`, Job: expect.any(String) }],
      Deleted: [],
    });
    expect(await idle.images.queue.depth()).toEqual({ waiting: 1, running: 0 });

    const disabled = await testApp();
    for (const path of ['distribution', 'harbor']) {
      const res = await webhook(disabled, event, { authorization: SECRET }, path);
      expect(res.statusCode, path).toBe(404);
      expect(json(res).Error.Message).toContain('clair.webhooks.secret');
    }
    expect(await disabled.images.queue.depth()).toEqual({ waiting: 0, running: 0 });
  });
});

describe.skipIf(missing.length > 0)(`a tag pushed twice in a row${skipped}`, () => {
  let registry: Registry;
  /** The registry's public face: its push events name it, so the webhook's scans pull through it. */
  let proxy: RegistryProxy;
  let t: TestApp;
  /** A blob whose download is held until released. */
  let held: { digest: string; arrived: () => void; released: Promise<void> } | undefined;
  let upstream = '';
  beforeAll(async () => {
    t = await testApp({ imageQueue: true, yaml: WEBHOOKS_YAML });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    // Started first, so the registry can name it; it reads the registry's URL at each request.
    const lateRegistry = {
      get url() {
        return upstream;
      },
    };
    proxy = await startRegistryProxy(lateRegistry, {
      blob: async (blob, body) => {
        const hold = held;
        if (hold?.digest === blob.digest) {
          hold.arrived();
          await hold.released;
        }
        return body;
      },
    });
    registry = await startRegistry({
      notifications: { url: `http://127.0.0.1:${port}/tarsier/v1/webhooks/distribution`, headers: { Authorization: [SECRET] } },
      publicUrl: proxy.url,
    });
    upstream = registry.url;
  });
  afterAll(async () => {
    await proxy?.close();
    await registry?.stop();
  });

  /** An image of its own (a Debian base and a layer no other image has): its layout, not pushed yet. */
  const image = (name: string): Promise<OciLayout> =>
    ociLayout(join(scratch, `layout-${++layouts}`), { layers: [debianLayer(9), layer({ [`srv/race/${name}`]: name })] });

  /** Holds the downloads of this blob; downloading resolves once one is held. */
  function hold(digest: string): { downloading: Promise<void>; release: () => void } {
    let arrived!: () => void;
    const downloading = new Promise<void>((resolve) => (arrived = resolve));
    let release!: () => void;
    held = { digest, arrived, released: new Promise<void>((resolve) => (release = resolve)) };
    return { downloading, release };
  }

  it('gives the tag to the image pushed last, though the scan of the one before ends after it', async () => {
    const first = await image('first');
    const second = await image('second');
    const slow = hold(first.images[0]!.layers[1]!.digest);
    try {
      const firstDigest = await pushImage(registry, first.dir, 'race/app', 'v1');
      // The first push's scan is downloading its own layer, and waits.
      await slow.downloading;
      const secondDigest = await pushImage(registry, second.dir, 'race/app', 'v1');
      await expect.poll(() => imagesOf(t, 'race/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[secondDigest, ['v1']]]);

      // Now the first scan ends: its image is recorded, without the tag the registry moved on.
      slow.release();
      await expect
        .poll(() => imagesByDigest(t, 'race/app'), { timeout: APPEARS_MS, interval: 200 })
        .toEqual(
          byDigest([
            [firstDigest, []],
            [secondDigest, ['v1']],
          ]),
        );
      await expect.poll(() => t.images.queue.depth(), { timeout: 5_000 }).toEqual({ waiting: 0, running: 0 });
      const tagged = json(await t.app.inject({ url: '/tarsier/v1/images?repository=race/app&tag=v1' })).Images;
      expect(tagged.map((i: any) => i.Digest)).toEqual([secondDigest]);

      // The first push's event delivered again (a retry) scans it again: the tag stays where the registry has it.
      const seenBefore = json(await t.app.inject({ url: `/tarsier/v1/images?digest=${firstDigest}` })).Images[0].LastSeen;
      const again = await webhook(t, distributionPushEvent(proxy.host, 'race/app', firstDigest, 'v1'), { authorization: SECRET });
      expect(again.statusCode, again.body).toBe(202);
      await expect
        .poll(async () => json(await t.app.inject({ url: `/tarsier/v1/images?digest=${firstDigest}` })).Images[0].LastSeen, {
          timeout: APPEARS_MS,
          interval: 200,
        })
        .not.toBe(seenBefore);
      expect(await imagesByDigest(t, 'race/app')).toEqual(
        byDigest([
          [firstDigest, []],
          [secondDigest, ['v1']],
        ]),
      );
    } finally {
      slow.release();
    }
  });
});

describe.skipIf(missing.length > 0)(`the same push announced many times${skipped}`, () => {
  let registry: Registry;
  let held: Awaited<ReturnType<typeof holdingProxy>>;
  let t: TestApp;
  beforeAll(async () => {
    registry = await startRegistry();
    held = await holdingProxy(registry);
    // Workers enough to run every copy at once, were each its own job.
    t = await testApp({ imageQueue: true, yaml: `${WEBHOOKS_YAML}\n  images:\n    workers: 8` });
  });
  afterAll(async () => {
    await held?.proxy.close();
    await registry?.stop();
  });

  /** tarsier_image_scans_total{outcome="scanned"}: the scans run to their end. */
  async function scansRun(): Promise<number> {
    const metric = await t.metrics.registry.getSingleMetric('tarsier_image_scans_total')!.get();
    return metric.values.find((v) => v.labels.outcome === 'scanned')?.value ?? 0;
  }

  it('scans it once: 20 identical events, 19 of them while its scan runs, are one job', async () => {
    const digest = await push(registry, 'burst/app', 'v1');
    const event = distributionPushEvent(held.proxy.host, 'burst/app', digest, 'v1');
    const hold = held.hold();
    try {
      const first = await webhook(t, event, { authorization: SECRET });
      expect(first.statusCode, first.body).toBe(202);
      // Its scan is under way, downloading a layer (held): the other 19 come now, together.
      await hold.downloading;
      const rest = await Promise.all(Array.from({ length: 19 }, () => webhook(t, event, { authorization: SECRET })));
      for (const res of rest) expect(res.statusCode, res.body).toBe(202);
      const jobs = [first, ...rest].map((res) => json(res).Queued.map((q: { Job: string }) => q.Job));
      expect(new Set(jobs.flat()).size).toBe(1);
    } finally {
      hold.release();
    }
    await expect.poll(() => imagesOf(t, 'burst/app'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[digest, ['v1']]]);
    await expect.poll(() => t.images.queue.depth(), { timeout: 5_000 }).toEqual({ waiting: 0, running: 0 });
    expect(await scansRun()).toBe(1);
  });
});

describe.skipIf(missing.length > 0)(`Harbor's delete events${skipped}`, () => {
  let registry: Registry;
  let t: TestApp;
  beforeAll(async () => {
    registry = await startRegistry();
    t = await testApp({ yaml: WEBHOOKS_YAML });
    await addVulnerability(t, 'debian:9', BASH);
  });
  afterAll(() => registry?.stop());

  it("forgets an artifact Harbor deletes (DELETE_ARTIFACT): an index's images go with it", async () => {
    const platforms = [
      { os: 'linux', architecture: 'amd64' },
      { os: 'linux', architecture: 'arm64', variant: 'v8' },
    ];
    const layout = await ociLayout(
      join(scratch, `layout-${++layouts}`),
      platforms.map((platform) => ({ layers: [debianLayer(9), layer({ [`srv/${platform.architecture}`]: 'harbor' })], platform })),
    );
    const index = await pushImage(registry, layout.dir, 'harbor/app', 'v1');
    // Harbor's event for the index: its resource_url on the registry's host.
    const resource = { digest: index, tag: 'v1', resource_url: `${registry.host}/harbor/app:v1` };
    const event = (type: string) => ({
      type,
      occur_at: 1737446601,
      operator: 'admin',
      event_data: {
        resources: [resource],
        repository: { name: 'app', namespace: 'harbor', repo_full_name: 'harbor/app', repo_type: 'private' },
      },
    });
    const scanned = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/images',
      payload: { reference: `${registry.host}/harbor/app:v1`, insecure: true },
    });
    expect(scanned.statusCode, scanned.body).toBe(201);
    const images = layout.images.map((i) => i.digest).sort();
    expect(await imagesByDigest(t, 'harbor/app')).toEqual(images.map((d) => [d, ['v1']]));
    expect(await exposed(t)).toEqual(expect.arrayContaining(images.map((d) => `harbor/app@${d}`)));

    // Harbor deletes the artifact from its registry, then sends the event.
    expect((await fetch(`${registry.url}/v2/harbor/app/manifests/${index}`, { method: 'DELETE' })).status).toBe(202);
    const res = await webhook(t, event('DELETE_ARTIFACT'), { authorization: SECRET }, 'harbor');
    expect(res.statusCode, res.body).toBe(202);
    expect(json(res)).toEqual({ Queued: [], Deleted: [{ Reference: `${registry.host}/harbor/app@${index}`, Images: 2 }] });
    expect(await imagesOf(t, 'harbor/app')).toEqual([]);
    expect((await exposed(t)).filter((image) => image.startsWith('harbor/app@'))).toEqual([]);
    // The same event again changes nothing more.
    expect(json(await webhook(t, event('DELETE_ARTIFACT'), { authorization: SECRET }, 'harbor')).Deleted).toEqual([
      { Reference: `${registry.host}/harbor/app@${index}`, Images: 0 },
    ]);
  });
});

describe.skipIf(missing.length > 0)(`queued scans across restarts${skipped}`, () => {
  let registry: Registry;
  /** Holds the answers of blob downloads while held (a layer download under way). */
  let held: Awaited<ReturnType<typeof holdingProxy>>;
  let proxy: RegistryProxy;
  let registriesYaml: string;
  beforeAll(async () => {
    registry = await startRegistry({ auth: 'basic' });
    held = await holdingProxy(registry);
    proxy = held.proxy;
    registriesYaml = [
      '  registries:',
      `    "${registry.host}": { username: ${registry.username}, password: ${registry.password}, insecure: true }`,
      `    "${proxy.host}": { username: ${registry.username}, password: ${registry.password}, insecure: true }`,
    ].join('\n');
  });
  afterAll(async () => {
    await proxy?.close();
    await registry?.stop();
  });

  it('runs a scan queued while no worker ran once a worker starts on the database (configured credentials)', async () => {
    const digest = await push(registry, 'restart/queued', 'v1');
    const before = await testApp({ yaml: registriesYaml });
    const queued = await before.app.inject({
      method: 'POST',
      url: '/tarsier/v1/images?wait=false',
      payload: { reference: `${registry.host}/restart/queued:v1` },
    });
    expect(queued.statusCode, queued.body).toBe(202);
    expect(await before.images.queue.depth()).toEqual({ waiting: 1, running: 0 });
    expect(await imagesOf(before, 'restart/queued')).toEqual([]);

    const after = await testApp({ pool: before.pool, yaml: registriesYaml, imageQueue: true });
    await expect.poll(() => imagesOf(after, 'restart/queued'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[digest, ['v1']]]);
    await expect.poll(() => after.images.queue.depth(), { timeout: 5_000 }).toEqual({ waiting: 0, running: 0 });
  });

  const lockedBy = async (pool: pg.Pool): Promise<Array<string | null>> =>
    (await pool.query<{ locked_by: string | null }>('SELECT locked_by FROM graphile_worker.jobs ORDER BY id')).rows.map((r) => r.locked_by);

  it('runs again, elsewhere, a scan whose server was killed in the middle of it', { timeout: 60_000 }, async () => {
    const digest = await push(registry, 'restart/killed', 'v1');
    const database = await freshDatabase();
    const pool: pg.Pool = createPool(database, 4, silentLog);
    whenDone(() => pool.end());
    const config = join(scratch, 'killed.yaml');
    await writeFile(config, `clair:\n  updater:\n    interval: 0\n${registriesYaml}\n`);

    const hold = held.hold();
    try {
      const server = await startTarsier({ DATABASE_URL: databaseUrl(database), TARSIER_CONFIG: config });
      const res = await fetch(`http://127.0.0.1:${server.apiPort}/tarsier/v1/images?wait=false`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reference: `${proxy.host}/restart/killed:v1` }),
      });
      expect(res.status, await res.clone().text()).toBe(202);

      // The server's worker holds the job and is downloading a layer (held by the proxy): kill it.
      await hold.downloading;
      const locked = await lockedBy(pool);
      expect(locked).toEqual([expect.any(String)]);
      server.child.kill('SIGKILL');
      expect(await server.exited).toBe('SIGKILL');
      // Nothing of the dead process releases it: the job stays locked by its worker.
      expect(await lockedBy(pool)).toEqual(locked);
    } finally {
      hold.release();
    }

    // Another server on the database finds the dead worker's job and runs it. This should take
    // seconds (the new server sweeps as it starts and sees the dead process's lease); with the bug
    // of the test below (no leases), the job waits for the one-minute grace of unregistered workers,
    // so the wait here allows for that.
    const after = await testApp({ pool, yaml: registriesYaml, imageQueue: true });
    await expect.poll(() => imagesOf(after, 'restart/killed'), { timeout: 40_000, interval: 250 }).toEqual([[digest, ['v1']]]);
    await expect.poll(() => after.images.queue.depth(), { timeout: 5_000 }).toEqual({ waiting: 0, running: 0 });
  });

  // Each worker holds a lease while its process runs: a scan running longer than a minute stays
  // with its worker, and is not run a second time by another replica's sweep.
  it('keeps a long scan with its live worker: another replica does not take it', async () => {
    const digest = await push(registry, 'restart/long', 'v1');
    const hold = held.hold();
    try {
      const worker = await testApp({ yaml: registriesYaml, imageQueue: true });
      const res = await worker.app.inject({
        method: 'POST',
        url: '/tarsier/v1/images?wait=false',
        payload: { reference: `${proxy.host}/restart/long:v1` },
      });
      expect(res.statusCode, res.body).toBe(202);
      await hold.downloading;
      const [running] = await lockedBy(worker.pool);
      expect(running).toEqual(expect.any(String));

      // The scan has been running for two minutes; a replica starts and looks for lost jobs.
      await worker.pool.query("UPDATE graphile_worker._private_jobs SET locked_at = now() - interval '2 minutes'");
      await testApp({ pool: worker.pool, yaml: registriesYaml, imageQueue: true });
      expect(await lockedBy(worker.pool)).toEqual([running]);
      const lease = await worker.pool.query('SELECT owner FROM lock WHERE name = $1', [`image-worker/${running}`]);
      expect(lease.rows).toEqual([{ owner: expect.stringMatching(/^image-queue /) }]);

      hold.release();
      await expect.poll(() => imagesOf(worker, 'restart/long'), { timeout: APPEARS_MS, interval: 200 }).toEqual([[digest, ['v1']]]);
    } finally {
      hold.release();
    }
  });
});

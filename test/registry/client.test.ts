/**
 * The registry client against a real registry (distribution's docker-registry, images pushed with
 * skopeo): manifests by tag and digest, Basic and Bearer authentication, blob locations a plain GET
 * can use, and the errors a user acts on. A small HTTP server plays a registry that lies, which no
 * real one does. The real-registry tests run where the programs are installed (CI installs them).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FetchSettings } from '../../src/indexer/fetch.js';
import {
  ManifestUnknown,
  parseChallenge,
  RegistryClient,
  RegistryError,
  type RegistryAccess,
  type RegistryHostSettings,
  type RegistryRepository,
} from '../../src/registry/client.js';
import { MEDIA_TYPES } from '../../src/registry/manifest.js';
import { debianLayer, layer, ociLayout, pushImage, type OciLayout } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../helpers/registry.js';

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : '';

const FETCH: FetchSettings = { localRoots: [], downloadTimeoutMs: 30_000, maxLayerBytes: 1 << 30, denyPrivate: false };

const sha256 = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;
const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

/**
 * A session for repository on host, from a client whose configuration knows that host only (so the
 * client must ask for it by the name references use, 127.0.0.1:PORT).
 */
function session(host: string, repository: string, settings?: RegistryHostSettings, access?: RegistryAccess): RegistryRepository {
  const client = new RegistryClient({ fetch: FETCH, hosts: (registry) => (registry === host ? settings : undefined) });
  return client.repository({ registry: host, repository }, access);
}

/** What the promise rejects with, which must be a RegistryError. */
async function registryError(promise: Promise<unknown>): Promise<RegistryError> {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(RegistryError);
  return error as RegistryError;
}

/** The account of a basic or token registry, as configured in clair.registries. */
const account = (registry: Registry): RegistryHostSettings => ({
  username: registry.username,
  password: registry.password,
  insecure: true,
});

describe.skipIf(missing.length > 0)(`the registry client against real registries${skipped}`, () => {
  let scratch: string;
  beforeAll(async () => void (scratch = await mkdtemp(join(tmpdir(), 'tarsier-client-'))));
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  /** A two-layer image (a Debian base and an application) pushed as team/app:v1; skopeo's digest. */
  async function pushApp(registry: Registry, name: string): Promise<{ image: OciLayout; digest: string }> {
    const image = await ociLayout(join(scratch, name), { layers: [debianLayer(), layer({ 'srv/app/server.js': 'listen(8080)' })] });
    return { image, digest: await pushImage(registry, image.dir, 'team/app', 'v1') };
  }

  describe('with basic auth', () => {
    let registry: Registry;
    let pushed: { image: OciLayout; digest: string };
    beforeAll(async () => {
      registry = await startRegistry({ auth: 'basic' });
      pushed = await pushApp(registry, 'basic');
    });
    afterAll(() => registry?.stop());

    it('fetches the manifest by tag and by digest with the configured credentials, layers bottom first', async () => {
      const repository = session(registry.host, 'team/app', account(registry));
      const expected = {
        kind: 'manifest',
        mediaType: MEDIA_TYPES.ociManifest,
        config: { digest: pushed.image.images[0]!.configDigest },
        layers: pushed.image.images[0]!.layers,
      };

      const byTag = await repository.manifest('v1');
      expect(byTag.digest).toBe(pushed.digest);
      expect(byTag.manifest).toMatchObject(expected);

      const byDigest = await repository.manifest(pushed.digest);
      expect(byDigest.digest).toBe(pushed.digest);
      expect(byDigest.manifest).toMatchObject(expected);
    });

    it('without credentials, says the registry needs them and where to configure them', async () => {
      const error = await registryError(session(registry.host, 'team/app', { insecure: true }).manifest('v1'));
      expect(error.message).toContain('needs credentials');
      expect(error.message).toContain(`clair.registries."${registry.host}"`);
      expect(error.retryable).toBe(false);
    });

    it('with a wrong password, is refused and says to check the credentials', async () => {
      const wrong = { ...account(registry), password: 'not-the-password' };
      const error = await registryError(session(registry.host, 'team/app', wrong).manifest('v1'));
      expect(error.message).toMatch(/refused access to .*team\/app:v1 \(401\): check the credentials/);
      expect(error.retryable).toBe(false);
    });
  });

  describe('with token auth', () => {
    let registry: Registry;
    let pushed: { image: OciLayout; digest: string };
    /** The service the registry's challenge names (the token must be asked for it). */
    let service: string;
    beforeAll(async () => {
      registry = await startRegistry({ auth: 'token' });
      pushed = await pushApp(registry, 'token');
      const challenge = parseChallenge((await fetch(`${registry.url}/v2/`)).headers.get('www-authenticate') ?? '');
      service = challenge?.params.service ?? '';
      expect(service).not.toBe('');
    });
    afterAll(() => registry?.stop());

    /** The token requests made while run ran. */
    async function tokenRequestsOf(run: () => Promise<unknown>) {
      const before = registry.tokenRequests.length;
      await run();
      return registry.tokenRequests.slice(before);
    }

    it('follows the Bearer challenge: one pull token for the repository, asked for as the account', async () => {
      let digest: string | undefined;
      const requests = await tokenRequestsOf(async () => {
        digest = (await session(registry.host, 'team/app', account(registry)).manifest('v1')).digest;
      });
      expect(digest).toBe(pushed.digest);
      expect(requests).toEqual([
        expect.objectContaining({ service, scopes: ['repository:team/app:pull'], username: registry.username, status: 200 }),
      ]);
    });

    it("takes the request's own Basic authorization (Harbor's way) when no credentials are configured", async () => {
      const access = { authorization: basic(registry.username, registry.password), insecure: true };
      let digest: string | undefined;
      const requests = await tokenRequestsOf(async () => {
        digest = (await session(registry.host, 'team/app', { insecure: true }, access).manifest('v1')).digest;
      });
      expect(digest).toBe(pushed.digest);
      expect(requests).toEqual([expect.objectContaining({ username: registry.username, status: 200 })]);
    });

    it('gives blob locations whose URL and Bearer authorization download the layer', async () => {
      const repository = session(registry.host, 'team/app', account(registry));
      const { manifest } = await repository.manifest('v1');
      expect(manifest.kind).toBe('manifest');
      const layers = manifest.kind === 'manifest' ? manifest.layers : [];
      expect(layers).toHaveLength(2);
      for (const descriptor of layers) {
        const location = await repository.blob(descriptor);
        expect(location.path).toBe(`${registry.url}/v2/team/app/blobs/${descriptor.digest}`);
        expect(location.headers.authorization).toMatch(/^Bearer \S+$/);

        const download = await request(location.path, { headers: location.headers });
        expect(download.statusCode).toBe(200);
        expect(sha256(Buffer.from(await download.body.arrayBuffer()))).toBe(descriptor.digest);
        // The authorization is what lets it through.
        const anonymous = await request(location.path);
        await anonymous.body.dump();
        expect(anonymous.statusCode).toBe(401);
      }
    });

    it('is refused without credentials, and by the token service with a wrong password', async () => {
      const anonymous = await registryError(session(registry.host, 'team/app', { insecure: true }).manifest('v1'));
      expect(anonymous.message).toContain(`needs credentials: configure clair.registries."${registry.host}"`);
      expect(anonymous.retryable).toBe(false);

      const wrong = { ...account(registry), password: 'not-the-password' };
      const refused = await registryError(session(registry.host, 'team/app', wrong).manifest('v1'));
      expect(refused.message).toContain('token service answered 401: check the credentials');
      expect(refused.retryable).toBe(false);
    });
  });

  describe('open', () => {
    let registry: Registry;
    beforeAll(async () => void (registry = await startRegistry({ auth: 'none' })));
    afterAll(() => registry?.stop());

    it('fetches a multi-platform image as an index, and each platform manifest by its digest', async () => {
      const arm64 = { os: 'linux', architecture: 'arm64', variant: 'v8' };
      const image = await ociLayout(join(scratch, 'multi'), [{ layers: [debianLayer(9)] }, { layers: [debianLayer(10)], platform: arm64 }]);
      const digest = await pushImage(registry, image.dir, 'team/multi', 'latest');
      const repository = session(registry.host, 'team/multi', { insecure: true });

      const index = await repository.manifest('latest');
      expect(index.digest).toBe(digest);
      expect(index.mediaType).toBe(MEDIA_TYPES.ociIndex);
      expect(index.manifest.kind).toBe('index');
      const entries = index.manifest.kind === 'index' ? index.manifest.manifests : [];
      expect(entries.map((entry) => [entry.digest, entry.platform])).toEqual([
        [image.images[0]!.digest, { os: 'linux', architecture: 'amd64' }],
        [image.images[1]!.digest, arm64],
      ]);

      for (const [i, entry] of entries.entries()) {
        const platform = await repository.manifest(entry.digest);
        expect(platform.digest).toBe(entry.digest);
        expect(platform.manifest).toMatchObject({ kind: 'manifest', layers: image.images[i]!.layers });
      }
    });

    it('fetches a Docker schema 2 manifest as such', async () => {
      const image = await ociLayout(join(scratch, 'docker'), { layers: [debianLayer()] });
      const digest = await pushImage(registry, image.dir, 'team/docker', 'v1', { format: 'v2s2' });
      const fetched = await session(registry.host, 'team/docker', { insecure: true }).manifest('v1');
      expect(fetched.digest).toBe(digest);
      expect(fetched.mediaType).toBe('application/vnd.docker.distribution.manifest.v2+json');
      expect(fetched.manifest).toMatchObject({
        kind: 'manifest',
        layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip' }],
      });
    });

    it('says a missing tag is missing, naming the reference, for good', async () => {
      const error = await registryError(session(registry.host, 'team/docker', { insecure: true }).manifest('no-such-tag'));
      expect(error.message).toContain(`has no manifest ${registry.host}/team/docker:no-such-tag`);
      expect(error.retryable).toBe(false);
    });

    it('over HTTPS (insecure: false) fails at once with a TLS failure instead of hanging', { timeout: 10_000 }, async () => {
      const error = await registryError(session(registry.host, 'team/docker', { insecure: false }).manifest('v1'));
      expect(error.message).toContain(`could not reach the registry at ${registry.host}: TLS failure`);
    });

    it('resolves a tag and a digest to the digest the registry has now, and what it deleted to nothing', async () => {
      const image = await ociLayout(join(scratch, 'resolved'), { layers: [layer({ 'srv/resolved': 'resolved' })] });
      const digest = await pushImage(registry, image.dir, 'team/resolved', 'v1');
      const repository = session(registry.host, 'team/resolved', { insecure: true });
      expect(await repository.resolve('v1')).toBe(digest);
      expect(await repository.resolve(digest)).toBe(digest);

      expect((await fetch(`${registry.url}/v2/team/resolved/manifests/${digest}`, { method: 'DELETE' })).status).toBe(202);
      expect(await repository.resolve('v1')).toBeUndefined();
      expect(await repository.resolve(digest)).toBeUndefined();
      const error = await registryError(repository.manifest(digest));
      expect(error).toBeInstanceOf(ManifestUnknown);
      expect(error.message).toBe(`the registry ${registry.host} has no manifest ${registry.host}/team/resolved@${digest}`);
    });

    // Last: it stops the registry.
    it('once the registry has stopped, says it cannot be reached and that a retry may do better', async () => {
      const repository = session(registry.host, 'team/docker', { insecure: true });
      await repository.manifest('v1');
      await registry.stop();
      const error = await registryError(repository.manifest('v1'));
      expect(error.message).toBe(`could not reach the registry at ${registry.host}: connection refused`);
      expect(error.retryable).toBe(true);
    });
  });
});

describe('the registry client against a registry that lies', () => {
  let server: Server;
  let host: string;
  /** How the server answers the request at hand; each test sets it. */
  let answer: (req: IncomingMessage, res: ServerResponse) => void;
  beforeAll(async () => {
    server = createServer((req, res) => answer(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const MANIFEST = JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociManifest,
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256('config'), size: 6 },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: sha256('layer'), size: 5 }],
  });
  const repository = () => session(host, 'lies/app', { insecure: true });
  const serveManifest = (body: string, headers: Record<string, string> = {}) =>
    void (answer = (_req, res) => res.writeHead(200, { 'content-type': MEDIA_TYPES.ociManifest, ...headers }).end(body));

  it('refuses a manifest asked for by digest whose bytes have another digest, naming the digest they have', async () => {
    serveManifest(MANIFEST);
    const asked = sha256('another manifest');
    const error = await registryError(repository().manifest(asked));
    expect(error.message).toBe(
      `the registry sent a manifest for ${host}/lies/app@${asked} whose bytes have the digest ${sha256(MANIFEST)}`,
    );
    expect(error.retryable).toBe(false);
    // The same bytes asked for by their own digest are taken.
    expect((await repository().manifest(sha256(MANIFEST))).digest).toBe(sha256(MANIFEST));
  });

  it('refuses a manifest whose Docker-Content-Digest is not the digest of its bytes', async () => {
    const announced = `sha256:${'0'.repeat(64)}`;
    serveManifest(MANIFEST, { 'docker-content-digest': announced });
    const error = await registryError(repository().manifest('v1'));
    expect(error.message).toContain(`announced the digest ${announced}`);
    expect(error.message).toContain(`its bytes have the digest ${sha256(MANIFEST)}`);
    serveManifest(MANIFEST, { 'docker-content-digest': sha256(MANIFEST) });
    expect((await repository().manifest('v1')).digest).toBe(sha256(MANIFEST));
  });

  it('reads a manifest of 4 MiB and refuses one a byte larger', async () => {
    const limit = 4 * 1024 * 1024;
    serveManifest(MANIFEST.padEnd(limit));
    expect((await repository().manifest('v1')).manifest.kind).toBe('manifest');
    serveManifest(MANIFEST.padEnd(limit + 1));
    const error = await registryError(repository().manifest('v1'));
    expect(error.message).toBe(`the manifest of ${host}/lies/app:v1 is larger than ${limit} bytes`);
  });

  it('asks for the digest with HEAD, and GETs the manifest only when the answer names none', async () => {
    const methods: string[] = [];
    const announced = `sha256:${'1'.repeat(64)}`;
    let withDigest = true;
    answer = (req, res) => {
      methods.push(req.method!);
      res.writeHead(200, { 'content-type': MEDIA_TYPES.ociManifest, ...(withDigest ? { 'docker-content-digest': announced } : {}) });
      res.end(req.method === 'HEAD' ? undefined : MANIFEST);
    };
    expect(await repository().resolve('v1')).toBe(announced);
    expect(methods).toEqual(['HEAD']);
    withDigest = false;
    methods.length = 0;
    expect(await repository().resolve('v1')).toBe(sha256(MANIFEST));
    expect(methods).toEqual(['HEAD', 'GET']);
  });

  // Only the registry's own word makes an image look deleted: a 404 for any other reason (a proxy, a
  // repository hidden from these credentials) must never make Tarsier forget an image.
  it("takes a manifest as gone only on a 404 whose error code says so (MANIFEST_UNKNOWN, Harbor's NOT_FOUND)", async () => {
    const notFound = (body: string) =>
      void (answer = (req, res) =>
        res.writeHead(404, { 'content-type': 'application/json' }).end(req.method === 'HEAD' ? undefined : body));
    for (const code of ['MANIFEST_UNKNOWN', 'NOT_FOUND']) {
      notFound(JSON.stringify({ errors: [{ code, message: 'manifest unknown' }] }));
      expect(await repository().resolve('v1'), code).toBeUndefined();
      expect(await registryError(repository().manifest('v1'))).toBeInstanceOf(ManifestUnknown);
    }
    for (const body of [
      JSON.stringify({ errors: [{ code: 'NAME_UNKNOWN', message: 'repository name not known' }] }),
      '',
      '<html>404</html>',
    ]) {
      notFound(body);
      const error = await registryError(repository().resolve('v1'));
      expect(error, body).not.toBeInstanceOf(ManifestUnknown);
      expect(error.message).toBe(`the registry ${host} has no manifest ${host}/lies/app:v1`);
    }
  });

  /** A registry that wants a Bearer token from its /token realm; tokenBody is what the realm answers. */
  function tokenRegistry(tokenBody: (n: number) => Record<string, unknown>) {
    const tokenRequests: Array<{ query: URLSearchParams; authorization: string | undefined }> = [];
    answer = (req, res) => {
      const url = new URL(req.url ?? '/', `http://${host}`);
      if (url.pathname === '/token') {
        tokenRequests.push({ query: url.searchParams, authorization: req.headers.authorization });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(tokenBody(tokenRequests.length)));
      } else if (req.headers.authorization === 'Bearer oauth-token-1') {
        res.writeHead(200, { 'content-type': MEDIA_TYPES.ociManifest }).end(MANIFEST);
      } else {
        res.writeHead(401, { 'www-authenticate': `Bearer realm="http://${host}/token",service="lies"` }).end();
      }
    };
    return tokenRequests;
  }

  it('follows a Bearer challenge whose token service answers access_token only (OAuth 2 style)', async () => {
    const tokenRequests = tokenRegistry((n) => ({ access_token: `oauth-token-${n}` }));
    expect((await repository().manifest('v1')).digest).toBe(sha256(MANIFEST));
    expect(tokenRequests.map(({ query }) => [query.get('service'), query.get('scope')])).toEqual([['lies', 'repository:lies/app:pull']]);
  });

  it('refuses a token service that sends no token', async () => {
    tokenRegistry(() => ({ expires_in: 300 }));
    const error = await registryError(repository().manifest('v1'));
    expect(error.message).toBe(`the registry ${host}'s token service sent no token`);
    expect(error.retryable).toBe(false);
  });

  // The token request never carries the session's token: a token service may refuse a header it
  // does not expect, and an anonymous pull would fail once its first token expired.
  it('renews an expiring anonymous token anonymously, as it got it', async () => {
    // expires_in 1 is inside the renewal margin at once, so blob() renews the token.
    const tokenRequests = tokenRegistry((n) => ({ token: `oauth-token-${n}`, expires_in: 1 }));
    const anonymous = repository();
    await anonymous.manifest('v1');
    const location = await anonymous.blob({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: sha256('layer'), size: 5 });
    expect(location.headers.authorization).toBe('Bearer oauth-token-2');
    expect(tokenRequests.map(({ authorization }) => authorization)).toEqual([undefined, undefined]);
  });
});

describe('parseChallenge', () => {
  it('reads a Bearer challenge whose quoted scope holds a comma', () => {
    expect(parseChallenge('Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"')).toEqual(
      {
        scheme: 'bearer',
        params: { realm: 'https://auth.example/token', service: 'registry.example', scope: 'repository:a/b:pull,push' },
      },
    );
  });

  it('reads a Basic challenge', () => {
    expect(parseChallenge('Basic realm="x"')).toEqual({ scheme: 'basic', params: { realm: 'x' } });
  });

  it('unescapes quotes and backslashes in quoted values', () => {
    expect(parseChallenge('Bearer realm="r",error_description="token \\"abc\\" expired \\\\ renew"')).toEqual({
      scheme: 'bearer',
      params: { realm: 'r', error_description: 'token "abc" expired \\ renew' },
    });
  });

  it('reads the scheme and parameter names in any case', () => {
    for (const challenge of ['bearer realm="r"', 'BEARER REALM="r"', 'Bearer Realm="r"']) {
      expect(parseChallenge(challenge), challenge).toEqual({ scheme: 'bearer', params: { realm: 'r' } });
    }
  });
});

describe('plain HTTP and credentials', () => {
  const client = (hosts: Record<string, RegistryHostSettings>, requestsConfigure?: boolean) =>
    new RegistryClient({ fetch: FETCH, hosts: (registry) => hosts[registry], requestsConfigure });
  const account = { username: 'u', password: 'p', insecure: false };
  const given = { authorization: basic('robot', 'secret') };

  it('refuses plain HTTP that would carry credentials, configured or given, unless the host is configured insecure', () => {
    const server = client({ 'configured:5000': account, 'insecure:5000': { ...account, insecure: true } });
    expect(server.cleartextProblem('configured:5000', { insecure: true })).toMatch(
      /^plain HTTP to the registry configured:5000 was asked for, but the credentials configured in clair\.registries are sent only over TLS/,
    );
    expect(server.cleartextProblem('bare:5000', { ...given, insecure: true })).toContain('the credentials given with the request');
    expect(() => server.repository({ registry: 'configured:5000', repository: 'a' }, { insecure: true })).toThrow(RegistryError);
    // Over TLS, or without credentials, or where the configuration allows it: nothing to refuse.
    expect(server.cleartextProblem('configured:5000', {})).toBeUndefined();
    expect(server.cleartextProblem('bare:5000', { ...given, insecure: false })).toBeUndefined();
    expect(server.cleartextProblem('bare:5000', { insecure: true })).toBeUndefined();
    expect(server.cleartextProblem('insecure:5000', {})).toBeUndefined();
    expect(server.cleartextProblem('insecure:5000', { ...given, insecure: true })).toBeUndefined();
  });

  it("takes a request's insecure as configuration where the requests are the operator's own (the CI scanner)", () => {
    expect(client({ 'configured:5000': account }, true).cleartextProblem('configured:5000', { insecure: true })).toBeUndefined();
  });
});

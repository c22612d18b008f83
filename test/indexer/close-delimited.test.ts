/**
 * Servers that end an answer by closing the connection (HTTP/1.0, as `python3 -m http.server`
 * and many mirrors speak it) while the reader is still behind: the end of the stream arrives
 * while the HTTP client holds the body back for its slow consumer. An HTTP client that asserts
 * it is never in that state ends the whole process, so a layer, a registry blob or a feed on such
 * a server must simply be read to the end.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { openLayer, type FetchSettings } from '../../src/indexer/fetch.js';
import { RegistryClient } from '../../src/registry/client.js';
import { MEDIA_TYPES } from '../../src/registry/manifest.js';
import { Downloader } from '../../src/updater/download.js';
import { startHttp10Server } from '../helpers/http10-server.js';
import { whenDone } from '../helpers/when-done.js';

const SETTINGS: FetchSettings = { localRoots: [], downloadTimeoutMs: 60_000, maxLayerBytes: 1 << 30, denyPrivate: false };
/** Large enough that the body is still being read when the server's close arrives. */
const LARGE = randomBytes(8 * 1024 * 1024);

const sha256 = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** A consumer slower than loopback (a decompressor on a busy machine): one chunk per timer turn. */
async function readSlowly(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return Buffer.concat(chunks);
}

describe('an HTTP/1.0 server that closes after the body', () => {
  it('serves a large layer to a slow reader, with and without a Content-Length, again and again', async () => {
    const server = await startHttp10Server();
    server.serve('/layer.tar.gz', LARGE);
    server.serve('/unannounced.tar.gz', LARGE, { contentLength: false });
    for (const path of ['/layer.tar.gz', '/unannounced.tar.gz', '/layer.tar.gz']) {
      const opened = await openLayer(server.url(path), {}, SETTINGS);
      expect(sha256(await readSlowly(opened.stream))).toBe(sha256(LARGE));
    }
  });

  it('serves a registry manifest, config and layer blob, the blob to a slow reader', async () => {
    const server = await startHttp10Server();
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } }));
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MEDIA_TYPES.dockerManifest,
        config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha256(config) },
        layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: LARGE.length, digest: sha256(LARGE) }],
      }),
    );
    server.serve('/v2/', Buffer.from('{}'), { contentType: 'application/json' });
    server.serve('/v2/team/app/manifests/latest', manifest, { contentType: MEDIA_TYPES.dockerManifest });
    server.serve(`/v2/team/app/blobs/${sha256(config)}`, config);
    server.serve(`/v2/team/app/blobs/${sha256(LARGE)}`, LARGE);
    const registry = new RegistryClient({ fetch: SETTINGS, hosts: () => ({ insecure: true }) });
    const repository = registry.repository({ registry: new URL(server.origin).host, repository: 'team/app' });

    const fetched = await repository.manifest('latest');
    expect(fetched.digest).toBe(sha256(manifest));
    if (!('layers' in fetched.manifest)) throw new Error('expected an image manifest');
    expect(await repository.config(fetched.manifest.config)).toMatchObject({ architecture: 'amd64' });
    const blob = await repository.blob(fetched.manifest.layers[0]!);
    const opened = await openLayer(blob.path, blob.headers, SETTINGS);
    expect(sha256(await readSlowly(opened.stream))).toBe(sha256(LARGE));
  });

  it('serves a large feed and a small index to the updater', async () => {
    const server = await startHttp10Server();
    const feed = Buffer.from(
      JSON.stringify({ records: Array.from({ length: 60_000 }, (_, i) => ({ id: `CVE-2099-${i}`, text: 'x'.repeat(100) })) }),
    );
    server.serve('/feed.json', feed, { contentType: 'application/json' });
    server.serve('/index.html', Buffer.from('<a href="feed.json">feed.json</a>'), { contentType: 'text/html', contentLength: false });
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-close-delimited-'));
    whenDone(() => rm(dir, { recursive: true, force: true }));
    const downloader = new Downloader(dir, 60_000);

    expect(await downloader.text(server.url('/index.html'))).toBe('<a href="feed.json">feed.json</a>');
    const result = await downloader.download(server.url('/feed.json'));
    if (result.status !== 'downloaded') throw new Error(`expected a download, got ${result.status}`);
    expect(sha256(await readFile(result.path))).toBe(sha256(feed));
  });
});

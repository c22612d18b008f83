/**
 * The image archives test/helpers/image-archives.ts writes, checked with the tools that read real
 * ones: the system's tar lists their entries and extracts what manifest.json names, skopeo (where
 * installed) reads the docker save archives as docker-archive and, for Docker 25's layout, as
 * oci-archive too. A wrong checksum, a missing entry or a digest that does not match its bytes
 * fails here rather than in the scanner's tests.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  alpineLayer,
  alpineLayerTar,
  debianLayerTar,
  dockerSaveArchive,
  largeLayerDockerArchive,
  missingSkopeo,
  ociArchive,
  rpmLayer,
  rpmLayerTar,
  skopeo,
  skopeoArchive,
} from '../helpers/image-archives.js';
import { debianLayer } from '../helpers/oci-image.js';

const run = promisify(execFile);
const sha256 = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

const noSkopeo = missingSkopeo();
const skipped = noSkopeo ? ' (skipped: skopeo not installed)' : '';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-image-archives-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The entry names `tar -tf` lists, in archive order. */
async function entries(file: string): Promise<string[]> {
  const { stdout } = await run('tar', ['-tf', file]);
  return stdout.split('\n').filter((line) => line !== '');
}

/** `tar -tvf` of a file, or of what a command prints: name → [type and mode, size, link target]. */
function verbose(listing: string): Map<string, { mode: string; size: number; target?: string }> {
  const listed = new Map<string, { mode: string; size: number; target?: string }>();
  for (const line of listing.split('\n').filter((l) => l !== '')) {
    // -rw-r--r-- 0/0   17408 2023-11-14 22:13 name[ -> target]
    const [mode, , size, , , name, arrow, target] = line.split(/\s+/);
    listed.set(name!, { mode: mode!, size: Number(size), ...(arrow === '->' ? { target: target! } : {}) });
  }
  return listed;
}

async function extract(file: string, entry: string): Promise<Buffer> {
  const { stdout } = await run('tar', ['-xOf', file, entry], { encoding: 'buffer', maxBuffer: 256 << 20 });
  return stdout;
}

const extractJson = async <T>(file: string, entry: string): Promise<T> => JSON.parse((await extract(file, entry)).toString()) as T;

/** The paths a layer tarball holds, as tar lists them. */
const layerPaths = (layer: Buffer): string[] =>
  execFileSync('tar', ['-tf', '-'], { input: layer })
    .toString()
    .split('\n')
    .filter((line) => line !== '');

interface ManifestItem {
  Config: string;
  RepoTags: string[] | null;
  Layers: string[];
}

describe('layers from the fixtures package databases', () => {
  it('builds Alpine, rpm and Debian layers tar reads, with the os-release of their distribution', () => {
    expect(layerPaths(alpineLayerTar('3.18'))).toEqual(['etc/os-release', 'lib/apk/db/installed']);
    expect(layerPaths(alpineLayerTar('3.16'))).toEqual(['etc/os-release', 'lib/apk/db/installed']);
    expect(layerPaths(rpmLayerTar('amazonlinux2023'))).toEqual(['etc/os-release', 'var/lib/rpm/rpmdb.sqlite']);
    expect(layerPaths(rpmLayerTar('rhel8'))).toEqual(['etc/os-release', 'var/lib/rpm/Packages']);
    expect(layerPaths(rpmLayerTar('sle15'))).toEqual(['etc/os-release', 'usr/lib/sysimage/rpm/Packages.db']);
    expect(layerPaths(debianLayerTar(10))).toEqual(['etc/os-release', 'var/lib/dpkg/status']);

    const osRelease = (layer: Buffer) => execFileSync('tar', ['-xOf', '-', 'etc/os-release'], { input: layer }).toString();
    expect(osRelease(alpineLayerTar('3.18'))).toMatch(/^ID=alpine$/m);
    expect(osRelease(alpineLayerTar('3.18'))).toMatch(/^VERSION_ID=3\.18/m);
    expect(osRelease(rpmLayerTar('amazonlinux2023'))).toMatch(/^VERSION_ID="2023"$/m);
    expect(osRelease(rpmLayerTar('sle15'))).toMatch(/^VERSION_ID="15\.3"$/m);
    // The SQLite database is the real file, not something else under its name.
    const sqlite = execFileSync('tar', ['-xOf', '-', 'var/lib/rpm/rpmdb.sqlite'], { input: rpmLayerTar(), maxBuffer: 64 << 20 });
    expect(sqlite.subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    // The gzip variants are the same tars compressed; debianLayerTar is debianLayer uncompressed.
    expect(execFileSync('gzip', ['-dc'], { input: alpineLayer() })).toEqual(alpineLayerTar());
    expect(execFileSync('gzip', ['-dc'], { input: rpmLayer('rhel8') })).toEqual(rpmLayerTar('rhel8'));
    expect(execFileSync('gzip', ['-dc'], { input: debianLayer(9) })).toEqual(debianLayerTar(9));
  });
});

describe('docker save, before Docker 25 (legacy)', () => {
  it('writes a directory a layer, the config, manifest.json and repositories, each layer hashing to its diff ID', async () => {
    const file = join(dir, 'legacy.tar');
    const { images } = await dockerSaveArchive(
      file,
      [
        { layers: [debianLayerTar(10), alpineLayerTar()], repoTags: ['alpine:3.18', 'registry.example:5000/team/app'] },
        { layers: [rpmLayerTar()] },
      ],
      { style: 'legacy' },
    );
    expect(images).toHaveLength(2);
    const [tagged, untagged] = images as [(typeof images)[0], (typeof images)[0]];

    const layerDirs = [...tagged.layerPaths, ...untagged.layerPaths].map((path) => path.slice(0, -'/layer.tar'.length));
    for (const id of layerDirs) expect(id).toMatch(/^[0-9a-f]{64}$/);
    const expected = [
      `${tagged.configDigest.slice(7)}.json`,
      `${untagged.configDigest.slice(7)}.json`,
      ...layerDirs.flatMap((id) => [`${id}/`, `${id}/VERSION`, `${id}/json`, `${id}/layer.tar`]),
      'manifest.json',
      'repositories',
    ].sort();
    // Docker's archive.Tar walks a directory: sorted, directories as entries of their own.
    expect(await entries(file)).toEqual(expected);

    const manifest = await extractJson<ManifestItem[]>(file, 'manifest.json');
    expect(manifest).toEqual([
      { Config: tagged.configPath, RepoTags: ['alpine:3.18', 'registry.example:5000/team/app:latest'], Layers: tagged.layerPaths },
      { Config: untagged.configPath, RepoTags: null, Layers: untagged.layerPaths },
    ]);
    for (const [item, image] of [
      [manifest[0]!, tagged],
      [manifest[1]!, untagged],
    ] as const) {
      const config = await extract(file, item.Config);
      expect(sha256(config)).toBe(image.configDigest);
      const layers = await Promise.all(item.Layers.map((path) => extract(file, path)));
      expect(layers.map(sha256)).toEqual(image.layerDigests);
      expect((JSON.parse(config.toString()) as { rootfs: { diff_ids: string[] } }).rootfs.diff_ids).toEqual(image.layerDigests);
    }
    expect(tagged.layerDigests).toEqual([sha256(debianLayerTar(10)), sha256(alpineLayerTar())]);

    // The v1 configs chain each layer to its parent; the top one carries the image's settings.
    const base = await extractJson<Record<string, unknown>>(file, `${layerDirs[0]}/json`);
    const top = await extractJson<Record<string, unknown>>(file, `${layerDirs[1]}/json`);
    expect(base).toMatchObject({ id: layerDirs[0], created: '1970-01-01T00:00:00Z', os: 'linux' });
    expect(base).not.toHaveProperty('parent');
    expect(top).toMatchObject({ id: layerDirs[1], parent: layerDirs[0], architecture: 'amd64', os: 'linux' });
    expect((await extract(file, `${layerDirs[0]}/VERSION`)).toString()).toBe('1.0');
    // repositories names the top layer's v1 ID; an untagged image is not in it.
    expect(await extractJson(file, 'repositories')).toEqual({
      alpine: { '3.18': layerDirs[1] },
      'registry.example:5000/team/app': { latest: layerDirs[1] },
    });
  });

  it('links a layer saved earlier under another ID, and writes a layer two images share once', async () => {
    const file = join(dir, 'legacy-shared.tar');
    const base = debianLayerTar(9);
    const { images } = await dockerSaveArchive(
      file,
      [
        // The same tar twice in one image: two v1 IDs (their parents differ), one copy of the bytes.
        { layers: [base, alpineLayerTar(), base], repoTags: ['repeat:1'] },
        { layers: [base, rpmLayerTar('rhel8')], repoTags: ['shared-base:1'] },
      ],
      { style: 'legacy' },
    );
    const [repeat, shared] = images as [(typeof images)[0], (typeof images)[0]];
    expect(shared.layerPaths[0]).toBe(repeat.layerPaths[0]);
    const listed = verbose((await run('tar', ['-tvf', file])).stdout);
    const link = listed.get(repeat.layerPaths[2]!)!;
    expect(link.mode.startsWith('l')).toBe(true);
    expect(link.target).toBe(`../${repeat.layerPaths[0]}`);
    expect(listed.get(repeat.layerPaths[0]!)).toMatchObject({ size: base.length });
    // Four layer directories for the five layers of two images: the shared base is written once.
    expect([...listed.keys()].filter((name) => name.endsWith('/layer.tar'))).toHaveLength(4);
  });
});

describe('docker save, Docker 25 and later (an OCI layout with manifest.json)', () => {
  it('writes blobs/sha256, index.json, manifest.json, oci-layout and repositories as docker does', async () => {
    const file = join(dir, 'oci-style.tar');
    const { images } = await dockerSaveArchive(
      file,
      [{ layers: [debianLayerTar(10), alpineLayerTar()], repoTags: ['alpine:3.18', 'example.com/team/app:v2'] }],
      { style: 'oci' },
    );
    const [image] = images as [(typeof images)[0]];
    const names = await entries(file);
    expect(names.slice(0, 2)).toEqual(['blobs/', 'blobs/sha256/']);
    expect(names.slice(-4)).toEqual(['index.json', 'manifest.json', 'oci-layout', 'repositories']);
    const blobs = names.filter((name) => /^blobs\/sha256\/[0-9a-f]{64}$/.test(name));
    // Two layers, the config, the manifest, and the two v1 layer configs docker still writes.
    expect(blobs).toHaveLength(6);
    expect(names).toHaveLength(blobs.length + 6);
    expect(blobs).toEqual([...blobs].sort());
    for (const blob of blobs) expect(sha256(await extract(file, blob))).toBe(`sha256:${blob.slice('blobs/sha256/'.length)}`);

    const [item] = await extractJson<ManifestItem[]>(file, 'manifest.json');
    expect(item).toEqual({
      Config: `blobs/sha256/${image.configDigest.slice(7)}`,
      RepoTags: ['alpine:3.18', 'example.com/team/app:v2'],
      Layers: image.layerDigests.map((digest) => `blobs/sha256/${digest.slice(7)}`),
    });
    expect(await Promise.all(item!.Layers.map(async (path) => sha256(await extract(file, path))))).toEqual(image.layerDigests);

    const index = await extractJson<{ manifests: { digest: string; annotations?: Record<string, string> }[] }>(file, 'index.json');
    expect(index).toMatchObject({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json' });
    expect(index.manifests.map((m) => [m.digest, m.annotations])).toEqual([
      [image.manifestDigest, { 'io.containerd.image.name': 'docker.io/library/alpine:3.18', 'org.opencontainers.image.ref.name': '3.18' }],
      [image.manifestDigest, { 'io.containerd.image.name': 'example.com/team/app:v2', 'org.opencontainers.image.ref.name': 'v2' }],
    ]);
    const manifest = await extractJson<{ config: { digest: string }; layers: { mediaType: string; digest: string }[] }>(
      file,
      `blobs/sha256/${image.manifestDigest!.slice(7)}`,
    );
    expect(manifest.config.digest).toBe(image.configDigest);
    expect(manifest.layers.map((l) => [l.mediaType, l.digest])).toEqual(
      image.layerDigests.map((digest) => ['application/vnd.oci.image.layer.v1.tar', digest]),
    );
    expect((await extract(file, 'oci-layout')).toString()).toBe('{"imageLayoutVersion": "1.0.0"}');
    // Since Docker 25 repositories names the top layer's diff ID, not a v1 ID.
    expect(await extractJson(file, 'repositories')).toEqual({
      alpine: { '3.18': image.layerDigests[1]!.slice(7) },
      'example.com/team/app': { v2: image.layerDigests[1]!.slice(7) },
    });
  });

  it('lists an untagged image in index.json only when nothing precedes it there, as docker does', async () => {
    const file = join(dir, 'oci-untagged.tar');
    const { images } = await dockerSaveArchive(file, [{ layers: [alpineLayerTar()], repoTags: ['first:1'] }, { layers: [rpmLayerTar()] }], {
      style: 'oci',
    });
    const index = await extractJson<{ manifests: { digest: string }[] }>(file, 'index.json');
    expect(index.manifests.map((m) => m.digest)).toEqual([images[0]!.manifestDigest]);
    expect((await extractJson<ManifestItem[]>(file, 'manifest.json')).map((m) => m.RepoTags)).toEqual([['first:1'], null]);
  });
});

describe(`skopeo reads the archives${skipped}`, () => {
  const inspect = async (reference: string, ...flags: string[]) =>
    JSON.parse(await skopeo(['inspect', ...flags, reference])) as { Digest: string; Layers: string[]; Architecture: string };

  it.skipIf(noSkopeo)('reads both docker save styles as docker-archive, and Docker 25s as oci-archive too', async () => {
    const layers = [debianLayerTar(10), alpineLayerTar('3.16')];
    const legacy = await dockerSaveArchive(join(dir, 'skopeo-legacy.tar'), [{ layers, repoTags: ['app:1'] }, { layers: [rpmLayerTar()] }], {
      style: 'legacy',
    });
    const oci = await dockerSaveArchive(
      join(dir, 'skopeo-oci.tar'),
      [{ layers, repoTags: ['app:1'], platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } }],
      { style: 'oci' },
    );

    expect((await inspect(`docker-archive:${legacy.file}:app:1`)).Layers).toEqual(legacy.images[0]!.layerDigests);
    expect((await inspect(`docker-archive:${legacy.file}:@1`)).Layers).toEqual(legacy.images[1]!.layerDigests);
    const viaDockerArchive = await inspect(`docker-archive:${oci.file}`);
    expect(viaDockerArchive).toMatchObject({ Layers: oci.images[0]!.layerDigests, Architecture: 'arm64' });
    // The same archive as an OCI layout: skopeo finds docker's manifest and its digest.
    const viaOciArchive = await inspect(`oci-archive:${oci.file}`);
    expect(viaOciArchive.Digest).toBe(oci.images[0]!.manifestDigest);
    expect(viaOciArchive.Layers).toEqual(oci.images[0]!.layerDigests);
    expect(sha256(await skopeo(['inspect', '--raw', '--config', `oci-archive:${oci.file}`]))).toBe(oci.images[0]!.configDigest);
  });

  it.skipIf(noSkopeo)('reads ociArchive archives, one platform or several', async () => {
    const single = await ociArchive(join(dir, 'single.oci.tar'), { layers: [alpineLayer()] }, { tag: 'v1' });
    expect(await entries(single.file)).toEqual(expect.arrayContaining(['oci-layout', 'index.json', 'blobs/sha256/']));
    const inspected = await inspect(`oci-archive:${single.file}:v1`);
    expect(inspected.Digest).toBe(single.digest);
    expect(inspected.Layers).toEqual(single.images[0]!.layers.map((l) => l.digest));
    expect(single.images[0]!.diffIds).toEqual([sha256(alpineLayerTar())]);

    const multi = await ociArchive(join(dir, 'multi.oci.tar'), [
      { layers: [rpmLayer()] },
      { layers: [alpineLayer()], platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } },
    ]);
    const raw = JSON.parse(await skopeo(['inspect', '--raw', `oci-archive:${multi.file}`])) as { manifests: { digest: string }[] };
    expect(sha256(JSON.stringify(raw))).toBe(multi.index!.digest);
    expect(raw.manifests.map((m) => m.digest)).toEqual(multi.images.map((image) => image.digest));
    const arm = await inspect(`oci-archive:${multi.file}`, '--override-arch', 'arm64', '--override-variant', 'v8');
    expect(arm.Layers).toEqual(multi.images[1]!.layers.map((l) => l.digest));
  });

  it.skipIf(noSkopeo)('writes a docker-archive with skopeo itself, layers uncompressed', async () => {
    const archive = await skopeoArchive(join(dir, 'by-skopeo.tar'), { layers: [debianLayer(10), alpineLayer()] }, 'tarsier-test/app:1');
    expect(archive.layerDigests).toEqual([sha256(debianLayerTar(10)), sha256(alpineLayerTar())]);
    expect(archive.manifest.RepoTags).toEqual(['docker.io/tarsier-test/app:1']);
    const layers = await Promise.all(archive.manifest.Layers.map((path) => extract(archive.file, path)));
    expect(layers.map(sha256)).toEqual(archive.layerDigests);
    expect(sha256(await extract(archive.file, archive.manifest.Config))).toBe(archive.configDigest);
  });
});

describe('a docker save archive with a large layer', () => {
  it('holds a 64 MiB sparse layer tar lists, whose bytes hash to the digest returned', async () => {
    // Not a multiple of 512, so the padding after the file counts.
    const bytes = (64 << 20) + 100;
    const file = join(dir, 'large.tar');
    const archive = await largeLayerDockerArchive(file, bytes);

    const outer = verbose((await run('tar', ['-tvf', file])).stdout);
    expect(outer.get(archive.layerPath)?.size).toBe(archive.layer.size);
    expect(archive.layer.size).toBeGreaterThan(bytes);
    const [item] = await extractJson<ManifestItem[]>(file, 'manifest.json');
    expect(item).toMatchObject({ Layers: [archive.layerPath], RepoTags: ['tarsier-test/large-layer:latest'] });

    // The layer itself, piped from the archive into a second tar.
    const { stdout } = await run('sh', ['-c', 'tar -xOf "$1" "$2" | tar -tvf -', 'sh', file, archive.layerPath]);
    const inner = verbose(stdout);
    expect([...inner.keys()]).toEqual(['etc/os-release', 'var/lib/dpkg/status', archive.largeFile]);
    expect(inner.get(archive.largeFile)?.size).toBe(bytes);
    const status = execFileSync('sh', ['-c', 'tar -xOf "$1" "$2" | tar -xOf - var/lib/dpkg/status', 'sh', file, archive.layerPath]);
    expect(status.toString()).toMatch(/^Package: postgresql/m);

    const hash = createHash('sha256');
    const { offset, size } = archive.layer;
    for await (const chunk of createReadStream(file, { start: offset, end: offset + size - 1 })) hash.update(chunk as Buffer);
    expect(`sha256:${hash.digest('hex')}`).toBe(archive.layerDigest);
    const config = await extractJson<{ rootfs: { diff_ids: string[] } }>(file, item!.Config);
    expect(config.rootfs.diff_ids).toEqual([archive.layerDigest]);
    expect(sha256(await extract(file, item!.Config))).toBe(archive.configDigest);

    // The zeros are holes: the file takes a few blocks, not 64 MiB.
    const { size: length, blocks } = await stat(file);
    // After the layer: manifest.json and repositories (a header and a block each), then the two end blocks.
    expect(length).toBe(offset + size + 3 * 1024);
    expect(blocks * 512).toBeLessThan(1 << 20);
  });
});

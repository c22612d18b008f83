import { execFile } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { debianLayer, ociLayout, type ImageSpec, type LayoutImage, type OciLayout, type Platform } from './oci-image.js';
import { gzip, tarball, type TarEntry } from './tarball.js';

/**
 * Image archives as the tools that make them write them, for tests of `tarsier scan ARCHIVE`:
 * `docker save` (before Docker 25 and since), an OCI layout in a tar (`skopeo copy ...
 * oci-archive:`), a docker-archive written by skopeo itself, and a docker save archive whose layer
 * is as large as a test wants without taking that much memory or disk.
 *
 * Naming follows oci-image.ts: `xLayer` is a gzip-compressed layer (what a registry and an OCI
 * layout hold), `xLayerTar` the same layer uncompressed (what docker save writes).
 */

const run = promisify(execFile);

const sha256 = (data: Buffer | string): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;
const hex = (digest: string): string => digest.slice('sha256:'.length);
const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));

// ---------------------------------------------------------------------------------------------
// Layers from the repository's real package databases
// ---------------------------------------------------------------------------------------------

/** An uncompressed tar layer holding files (path: content). */
export function layerTar(files: Record<string, string | Buffer>): Buffer {
  return tarball(Object.entries(files).map(([path, content]) => ({ path, content })));
}

/** debianLayer (oci-image.ts) uncompressed: etc/os-release and var/lib/dpkg/status of a real Debian image. */
export function debianLayerTar(release: Parameters<typeof debianLayer>[0] = 9): Buffer {
  return gunzipSync(debianLayer(release));
}

/** Alpine releases with a real apk database in test/fixtures/apk and the os-release of that release. */
export type AlpineVersion = '3.4' | '3.16' | '3.18';

/** An Alpine base layer: etc/os-release and lib/apk/db/installed of a real Alpine image, uncompressed. */
export function alpineLayerTar(version: AlpineVersion = '3.18'): Buffer {
  return layerTar({
    'etc/os-release': fixture(`osrelease/alpine-${version}/etc/os-release`),
    'lib/apk/db/installed': fixture(`apk/alpine-${version}/lib/apk/db/installed`),
  });
}

/** alpineLayerTar, gzip-compressed (for ociLayout, ociArchive, skopeoArchive). */
export const alpineLayer = (version: AlpineVersion = '3.18'): Buffer => gzip(alpineLayerTar(version));

/**
 * The rpm databases of test/fixtures/rpm that come from a distribution's image, each with the
 * os-release of that distribution and the path the distribution keeps its database at (one the
 * rpm lister reads): SQLite on Amazon Linux 2023, Berkeley DB on RHEL 8 (UBI), ndb on SLE 15 SP3
 * (which moved the database to usr/lib/sysimage/rpm).
 */
const RPM_IMAGES = {
  amazonlinux2023: {
    database: 'rpm/amazonlinux2023-sqlite/rpmdb.sqlite',
    path: 'var/lib/rpm/rpmdb.sqlite',
    osRelease: 'osrelease/amazon-2023/etc/os-release',
  },
  rhel8: {
    database: 'rpm/rhel8-libuuid-bdb/Packages',
    path: 'var/lib/rpm/Packages',
    osRelease: 'osrelease/ubi-8/etc/os-release',
  },
  sle15: {
    database: 'rpm/sle15-bci-ndb/Packages.db',
    path: 'usr/lib/sysimage/rpm/Packages.db',
    osRelease: 'osrelease/sles-15.3/etc/os-release',
  },
} as const;

export type RpmImage = keyof typeof RPM_IMAGES;

/**
 * An rpm-based base layer, uncompressed: the os-release and rpm database of a real image
 * (amazonlinux2023: 103 packages; rhel8: libuuid only; sle15: 36 packages, see the fixtures'
 * expected.json).
 */
export function rpmLayerTar(image: RpmImage = 'amazonlinux2023'): Buffer {
  const { database, path, osRelease } = RPM_IMAGES[image];
  return layerTar({ 'etc/os-release': fixture(osRelease), [path]: fixture(database) });
}

/** rpmLayerTar, gzip-compressed. */
export const rpmLayer = (image: RpmImage = 'amazonlinux2023'): Buffer => gzip(rpmLayerTar(image));

// ---------------------------------------------------------------------------------------------
// Sparse tar writing: archives are written as chunks, where a number is a run of zero bytes left
// as a hole in the file, so a layer of any size costs neither memory nor disk blocks.
// ---------------------------------------------------------------------------------------------

type Chunk = Buffer | number;

type ArchiveEntry = { path: string; type: 'dir' } | { path: string; type: 'symlink'; target: string } | { path: string; content: Chunk[] };

const BLOCK = 512;
const ZEROS = Buffer.alloc(1 << 20);

const chunksSize = (chunks: readonly Chunk[]): number =>
  chunks.reduce<number>((sum, chunk) => sum + (typeof chunk === 'number' ? chunk : chunk.length), 0);

const padding = (size: number): number => (BLOCK - (size % BLOCK)) % BLOCK;

/** The header block(s) of one entry, from tarball (which writes checksums and PAX paths right). */
const headerOf = (entry: TarEntry): Buffer => tarball([entry], { eof: false });

function hashChunks(chunks: readonly Chunk[]): string {
  const hash: Hash = createHash('sha256');
  for (const chunk of chunks) {
    if (typeof chunk !== 'number') hash.update(chunk);
    else for (let left = chunk; left > 0; left -= ZEROS.length) hash.update(ZEROS.subarray(0, Math.min(left, ZEROS.length)));
  }
  return `sha256:${hash.digest('hex')}`;
}

/** Where an entry's content sits in the archive file. */
export interface EntryRange {
  offset: number;
  size: number;
}

/**
 * Writes entries as a tar file: headers and non-zero content at their offsets, zero runs, padding
 * and the two end-of-archive blocks as holes (ftruncate sets the length). Returns where each
 * file entry's content sits.
 */
async function writeArchive(file: string, entries: readonly ArchiveEntry[]): Promise<Map<string, EntryRange>> {
  const ranges = new Map<string, EntryRange>();
  const handle = await open(file, 'w');
  try {
    let position = 0;
    const put = async (chunks: readonly Chunk[]) => {
      for (const chunk of chunks) {
        if (typeof chunk !== 'number') await handle.write(chunk, 0, chunk.length, position);
        position += typeof chunk === 'number' ? chunk : chunk.length;
      }
    };
    for (const entry of entries) {
      if ('type' in entry) {
        await put([headerOf(entry)]);
        continue;
      }
      const size = chunksSize(entry.content);
      await put([headerOf({ path: entry.path, type: 'raw', size, content: Buffer.alloc(0) })]);
      ranges.set(entry.path, { offset: position, size });
      await put([...entry.content, padding(size)]);
    }
    await put([2 * BLOCK]);
    await handle.truncate(position);
  } finally {
    await handle.close();
  }
  return ranges;
}

// ---------------------------------------------------------------------------------------------
// docker save
// ---------------------------------------------------------------------------------------------

export interface DockerSaveImage {
  /** Uncompressed tar layers, base first. */
  layers: Buffer[];
  /** Tags as `docker save` is given them: `alpine:3.18`, `registry.example:5000/team/app:1`. */
  repoTags?: string[];
  /** Defaults to linux/amd64. */
  platform?: Platform;
  /** Fields added to (or replacing) those of the image config this writes. */
  config?: Record<string, unknown>;
}

export interface DockerSaveOptions {
  /** legacy: Docker before 25 (a directory a layer); oci: Docker 25 and later (an OCI layout plus manifest.json). */
  style: 'legacy' | 'oci';
}

export interface SavedImage {
  /** The image config's digest, which is the image ID `docker images --digests` shows. */
  configDigest: string;
  /** oci style: the digest of the OCI manifest docker writes (its index.json lists it). */
  manifestDigest?: string;
  /** sha256 of each uncompressed layer, base first: the config's rootfs.diff_ids. */
  layerDigests: string[];
  /** The tags manifest.json lists, in docker's familiar form (`alpine:3.18`, not `docker.io/library/...`). */
  repoTags: string[];
  /** manifest.json's Config: the entry holding the config. */
  configPath: string;
  /** manifest.json's Layers: the entries holding the layers, base first. */
  layerPaths: string[];
}

export interface DockerSaveArchive {
  file: string;
  /** One an image ID: images whose configs are identical are one image to docker, their tags merged. */
  images: SavedImage[];
}

/** A layer to save: its content as chunks (a number is that many zero bytes) and its digest. */
interface LayerContent {
  chunks: Chunk[];
  diffId: string;
}

interface ImageToSave {
  layers: LayerContent[];
  repoTags: string[];
  platform: Platform;
  config?: Record<string, unknown>;
}

/** A tag docker save was given, as docker reads it (distribution's reference package). */
interface ParsedTag {
  /** `alpine:3.18`: what manifest.json's RepoTags hold. */
  familiar: string;
  /** `alpine`: the key of the repositories file. */
  familiarName: string;
  /** `docker.io/library/alpine:3.18`: the io.containerd.image.name annotation. */
  full: string;
  tag: string;
}

function parseTag(reference: string): ParsedTag {
  const slash = reference.lastIndexOf('/');
  const colon = reference.lastIndexOf(':');
  const [name, tag] = colon > slash ? [reference.slice(0, colon), reference.slice(colon + 1)] : [reference, 'latest'];
  const first = name.split('/')[0]!;
  const hasDomain = name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  let full = hasDomain ? name : `docker.io/${name}`;
  if (!hasDomain && !name.includes('/')) full = `docker.io/library/${name}`;
  let familiarName = full;
  if (full.startsWith('docker.io/')) {
    familiarName = full.slice('docker.io/'.length);
    if (familiarName.startsWith('library/') && familiarName.split('/').length === 2) familiarName = familiarName.slice('library/'.length);
  }
  return { familiar: `${familiarName}:${tag}`, familiarName, full: `${full}:${tag}`, tag };
}

/** The image config docker keeps (and whose digest is the image ID). */
function imageConfig(image: ImageToSave): Buffer {
  const { os, architecture, variant } = image.platform;
  return Buffer.from(
    JSON.stringify({
      architecture,
      ...(variant ? { variant } : {}),
      config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['/bin/sh'] },
      created: '2024-01-01T00:00:00Z',
      history: image.layers.map((_, i) => ({ created: '2024-01-01T00:00:00Z', created_by: `ADD layer-${i}.tar /` })),
      os,
      rootfs: { type: 'layers', diff_ids: image.layers.map((layer) => layer.diffId) },
      ...image.config,
    }),
  );
}

/**
 * The container_config every v1 layer config carries: Go marshals the zero container.Config
 * (docker's api/types/container) with these fields, the rest being omitempty.
 */
const ZERO_CONTAINER_CONFIG = {
  Hostname: '',
  Domainname: '',
  User: '',
  AttachStdin: false,
  AttachStdout: false,
  AttachStderr: false,
  Tty: false,
  OpenStdin: false,
  StdinOnce: false,
  Env: null,
  Cmd: null,
  Image: '',
  Volumes: null,
  WorkingDir: '',
  Entrypoint: null,
  OnBuild: null,
  Labels: null,
};

/** Layer chain IDs (layer.CreateChainID): the first diff ID, then sha256("<parent chain> <diff id>"). */
function chainIds(diffIds: readonly string[]): string[] {
  const chain: string[] = [];
  for (const diffId of diffIds) chain.push(chain.length === 0 ? diffId : sha256(`${chain.at(-1)!} ${diffId}`));
  return chain;
}

interface V1Layer {
  /** The v1 ID (hex): the layer's directory in a legacy archive. */
  id: string;
  /** The v1 config: the legacy `json` file; a blob in an oci-style archive. */
  json: Buffer;
}

/**
 * The v1 configs docker save derives, one a layer (tarexport saveImage): all but the top one are
 * empty but for created (the epoch), container_config and os; the top one carries the image's
 * config. Each ID is v1.CreateID: sha256 of that config without id, plus layer_id (the chain ID)
 * and parent (the parent's v1 ID as a digest), keys sorted as Go marshals a map.
 */
function v1Layers(image: ImageToSave, config: Record<string, unknown>): V1Layer[] {
  const chain = chainIds(image.layers.map((layer) => layer.diffId));
  const layers: V1Layer[] = [];
  let parent = '';
  chain.forEach((chainId, i) => {
    const top = i === chain.length - 1;
    // In Go struct order (image.V1Image): created, container_config, config, architecture, variant, os.
    const v1: Record<string, unknown> = top
      ? {
          created: config.created,
          container_config: ZERO_CONTAINER_CONFIG,
          config: config.config,
          architecture: config.architecture,
          ...(config.variant ? { variant: config.variant } : {}),
          os: config.os,
        }
      : { created: '1970-01-01T00:00:00Z', container_config: ZERO_CONTAINER_CONFIG, os: config.os };
    const forId: Record<string, unknown> = { ...v1, layer_id: chainId, ...(parent ? { parent } : {}) };
    const sorted = Object.fromEntries(
      Object.keys(forId)
        .sort()
        .map((key) => [key, forId[key]]),
    );
    const id = hex(sha256(JSON.stringify(sorted)));
    layers.push({ id, json: Buffer.from(JSON.stringify({ id, ...(parent ? { parent: hex(parent) } : {}), ...v1 })) });
    parent = `sha256:${id}`;
  });
  return layers;
}

/** Images as docker holds them: one an image ID, tags of identical images merged. */
function byImageId(images: readonly ImageToSave[]): { image: ImageToSave; config: Buffer; tags: ParsedTag[] }[] {
  const saved = new Map<string, { image: ImageToSave; config: Buffer; tags: ParsedTag[] }>();
  for (const image of images) {
    const config = imageConfig(image);
    const id = sha256(config);
    const entry = saved.get(id) ?? { image, config, tags: [] };
    for (const tag of image.repoTags.map(parseTag)) if (!entry.tags.some((t) => t.full === tag.full)) entry.tags.push(tag);
    saved.set(id, entry);
  }
  return [...saved.values()];
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
/** What Go's json.Encoder writes (manifest.json, repositories): the JSON and a newline. */
const encoded = (value: unknown): Buffer => Buffer.from(`${JSON.stringify(value)}\n`);

/** Go's map encoding sorts keys; the repositories file is map[name]map[tag]id. */
function repositoriesFile(repositories: Map<string, Map<string, string>>): Buffer {
  const sorted = [...repositories.keys()].sort();
  return encoded(
    Object.fromEntries(
      sorted.map((name) => {
        const tags = repositories.get(name)!;
        return [name, Object.fromEntries([...tags.keys()].sort().map((tag) => [tag, tags.get(tag)!]))];
      }),
    ),
  );
}

/** Docker's archive.Tar walks its temporary directory: entries sorted by name within each directory. */
const byPath = (a: ArchiveEntry, b: ArchiveEntry): number => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/**
 * Docker before 25 (moby image/tarexport/save.go at v24): a directory a layer, named by its v1 ID,
 * holding VERSION ("1.0"), json (the v1 config) and layer.tar; `<config hex>.json`; manifest.json;
 * repositories (tag → top layer's v1 ID). A layer whose content was already written under another
 * v1 ID (the same tar in another position or another image) becomes a symbolic link to it.
 */
function legacyEntries(images: readonly ImageToSave[]): { entries: ArchiveEntry[]; saved: SavedImage[] } {
  const files = new Map<string, ArchiveEntry>();
  const layerTarOf = new Map<string, string>();
  const manifest: { Config: string; RepoTags: string[] | null; Layers: string[] }[] = [];
  const repositories = new Map<string, Map<string, string>>();
  const saved: SavedImage[] = [];
  for (const { image, config, tags } of byImageId(images)) {
    const v1 = v1Layers(image, JSON.parse(config.toString()) as Record<string, unknown>);
    v1.forEach(({ id, json: v1Json }, i) => {
      if (files.has(`${id}/`)) return;
      files.set(`${id}/`, { path: `${id}/`, type: 'dir' });
      files.set(`${id}/VERSION`, { path: `${id}/VERSION`, content: [Buffer.from('1.0')] });
      files.set(`${id}/json`, { path: `${id}/json`, content: [v1Json] });
      const layer = image.layers[i]!;
      const earlier = layerTarOf.get(layer.diffId);
      files.set(
        `${id}/layer.tar`,
        earlier
          ? { path: `${id}/layer.tar`, type: 'symlink', target: `../${earlier}` }
          : { path: `${id}/layer.tar`, content: layer.chunks },
      );
      if (!earlier) layerTarOf.set(layer.diffId, `${id}/layer.tar`);
    });
    const configPath = `${hex(sha256(config))}.json`;
    files.set(configPath, { path: configPath, content: [config] });
    for (const tag of tags) {
      const tagsOfName = repositories.get(tag.familiarName) ?? new Map<string, string>();
      tagsOfName.set(tag.tag, v1.at(-1)!.id);
      repositories.set(tag.familiarName, tagsOfName);
    }
    const layerPaths = v1.map(({ id }) => `${id}/layer.tar`);
    // RepoTags is not omitempty: an untagged image's is null.
    manifest.push({ Config: configPath, RepoTags: tags.length > 0 ? tags.map((t) => t.familiar) : null, Layers: layerPaths });
    saved.push({
      configDigest: sha256(config),
      layerDigests: image.layers.map((layer) => layer.diffId),
      repoTags: tags.map((t) => t.familiar),
      configPath,
      layerPaths,
    });
  }
  files.set('manifest.json', { path: 'manifest.json', content: [encoded(manifest)] });
  if (repositories.size > 0) files.set('repositories', { path: 'repositories', content: [repositoriesFile(repositories)] });
  return { entries: [...files.values()].sort(byPath), saved };
}

const OCI = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  /** docker save stores layers uncompressed, whatever the registry served. */
  layer: 'application/vnd.oci.image.layer.v1.tar',
} as const;

/**
 * Docker 25 and later (moby daemon/internal/image/tarexport/save.go): an OCI image layout (blobs/sha256,
 * index.json, oci-layout) that also keeps manifest.json and repositories, whose paths point into
 * blobs/sha256. The blobs also hold each layer's v1 config, which nothing references. index.json
 * lists each image's manifest once a tag, annotated with the full name and the tag, and an untagged
 * image only while nothing is listed yet (docker's own rule: an untagged image saved after a tagged
 * one is in manifest.json only). Descriptors in index.json carry no platform.
 */
function ociEntries(images: readonly ImageToSave[]): { entries: ArchiveEntry[]; saved: SavedImage[] } {
  const blobs = new Map<string, Chunk[]>();
  const manifest: { Config: string; RepoTags: string[] | null; Layers: string[] }[] = [];
  const manifestDescriptors: Record<string, unknown>[] = [];
  const repositories = new Map<string, Map<string, string>>();
  const saved: SavedImage[] = [];
  const blobPath = (digest: string) => `blobs/sha256/${hex(digest)}`;
  for (const { image, config, tags } of byImageId(images)) {
    const configDigest = sha256(config);
    for (const { json: v1Json } of v1Layers(image, JSON.parse(config.toString()) as Record<string, unknown>)) {
      blobs.set(sha256(v1Json), [v1Json]);
    }
    for (const layer of image.layers) blobs.set(layer.diffId, layer.chunks);
    blobs.set(configDigest, [config]);
    const manifestBlob = json({
      schemaVersion: 2,
      mediaType: OCI.manifest,
      config: { mediaType: OCI.config, digest: configDigest, size: config.length },
      layers: image.layers.map((layer) => ({ mediaType: OCI.layer, digest: layer.diffId, size: chunksSize(layer.chunks) })),
    });
    const manifestDigest = sha256(manifestBlob);
    blobs.set(manifestDigest, [manifestBlob]);
    const untagged = { mediaType: OCI.manifest, digest: manifestDigest, size: manifestBlob.length };
    for (const tag of tags) {
      const tagsOfName = repositories.get(tag.familiarName) ?? new Map<string, string>();
      tagsOfName.set(tag.tag, hex(image.layers.at(-1)!.diffId));
      repositories.set(tag.familiarName, tagsOfName);
      manifestDescriptors.push({
        ...untagged,
        annotations: { 'io.containerd.image.name': tag.full, 'org.opencontainers.image.ref.name': tag.tag },
      });
    }
    if (manifestDescriptors.length === 0) manifestDescriptors.push(untagged);
    const layerPaths = image.layers.map((layer) => blobPath(layer.diffId));
    manifest.push({
      Config: blobPath(configDigest),
      RepoTags: tags.length > 0 ? tags.map((t) => t.familiar) : null,
      Layers: layerPaths,
    });
    saved.push({
      configDigest,
      manifestDigest,
      layerDigests: image.layers.map((layer) => layer.diffId),
      repoTags: tags.map((t) => t.familiar),
      configPath: blobPath(configDigest),
      layerPaths,
    });
  }
  const entries: ArchiveEntry[] = [
    { path: 'blobs/', type: 'dir' },
    { path: 'blobs/sha256/', type: 'dir' },
    ...[...blobs].map(([digest, content]) => ({ path: blobPath(digest), content })),
    { path: 'index.json', content: [json({ schemaVersion: 2, mediaType: OCI.index, manifests: manifestDescriptors })] },
    { path: 'manifest.json', content: [encoded(manifest)] },
    // Docker writes this one by hand, with the space.
    { path: 'oci-layout', content: [Buffer.from('{"imageLayoutVersion": "1.0.0"}')] },
  ];
  if (repositories.size > 0) entries.push({ path: 'repositories', content: [repositoriesFile(repositories)] });
  return { entries: entries.sort(byPath), saved };
}

async function writeDockerSave(
  file: string,
  images: readonly ImageToSave[],
  style: DockerSaveOptions['style'],
): Promise<{ saved: SavedImage[]; ranges: Map<string, EntryRange> }> {
  if (images.some((image) => image.layers.length === 0)) throw new Error('docker save refuses an image without layers');
  const { entries, saved } = style === 'legacy' ? legacyEntries(images) : ociEntries(images);
  return { saved, ranges: await writeArchive(file, entries) };
}

/**
 * Writes file as `docker save` writes images: style legacy as Docker before 25, style oci as
 * Docker 25 and later (with its classic image store; see the two functions above for the layouts).
 * Entry names, their order (sorted, directories first as entries of their own) and the JSON
 * files' shapes follow moby's tarexport; layer IDs and configs are computed the same way, but from
 * a config this writes, so they are not those of any image on Docker Hub.
 */
export async function dockerSaveArchive(file: string, images: DockerSaveImage[], options: DockerSaveOptions): Promise<DockerSaveArchive> {
  const toSave = images.map((image) => ({
    layers: image.layers.map((layer) => ({ chunks: [layer], diffId: sha256(layer) })),
    repoTags: image.repoTags ?? [],
    platform: image.platform ?? { os: 'linux', architecture: 'amd64' },
    ...(image.config ? { config: image.config } : {}),
  }));
  const { saved } = await writeDockerSave(file, toSave, options.style);
  return { file, images: saved };
}

// ---------------------------------------------------------------------------------------------
// A docker save archive with a large layer
// ---------------------------------------------------------------------------------------------

export interface LargeLayerArchive {
  file: string;
  /** The image ID. */
  configDigest: string;
  /** sha256 of the uncompressed layer (its diff ID). */
  layerDigest: string;
  /** The layer's entry in the archive (manifest.json's only Layers path). */
  layerPath: string;
  /** Where the layer's bytes are in file, for a test that reads them back. */
  layer: EntryRange;
  /** The path, inside the layer, of the file of zeros. */
  largeFile: string;
  /** Its size: bytes. */
  largeFileSize: number;
}

/** The file of zeros inside the large layer. */
const LARGE_FILE = 'opt/large/zeros.bin';

/**
 * A legacy docker save archive of one image whose single layer holds Debian 10's os-release and
 * dpkg status (so the layer yields packages) and a file of `bytes` zero bytes, written without
 * holding the layer in memory: only headers and the small files are written, the zeros are holes,
 * so a 1 GiB layer takes a few disk blocks. The layer's digest is hashed from the same chunks, a
 * reused zero buffer standing for the holes: it is needed before the entries can be named.
 */
export async function largeLayerDockerArchive(
  file: string,
  bytes: number,
  options: { repoTags?: string[] } = {},
): Promise<LargeLayerArchive> {
  const smallFiles = tarball(
    [
      { path: 'etc/os-release', content: fixture('osrelease/debian-10/etc/os-release') },
      { path: 'var/lib/dpkg/status', content: fixture('dpkg/debian-10-postgresql.status') },
    ],
    { eof: false },
  );
  const chunks: Chunk[] = [
    smallFiles,
    headerOf({ path: LARGE_FILE, type: 'raw', size: bytes, content: Buffer.alloc(0) }),
    bytes + padding(bytes),
    2 * BLOCK,
  ];
  const diffId = hashChunks(chunks);
  const image: ImageToSave = {
    layers: [{ chunks, diffId }],
    repoTags: options.repoTags ?? ['tarsier-test/large-layer:latest'],
    platform: { os: 'linux', architecture: 'amd64' },
  };
  const { saved, ranges } = await writeDockerSave(file, [image], 'legacy');
  const [{ configDigest, layerPaths }] = saved as [SavedImage];
  const layerPath = layerPaths[0]!;
  return {
    file,
    configDigest,
    layerDigest: diffId,
    layerPath,
    layer: ranges.get(layerPath)!,
    largeFile: LARGE_FILE,
    largeFileSize: bytes,
  };
}

// ---------------------------------------------------------------------------------------------
// OCI archives, and a docker-archive written by skopeo
// ---------------------------------------------------------------------------------------------

export interface OciArchiveImage extends LayoutImage {
  /** sha256 of each layer uncompressed (the config's diff_ids), base first; layers[].digest are the gzip blobs'. */
  diffIds: string[];
}

export interface OciArchive {
  file: string;
  /** What the archive's index.json points at: the index for a multi-platform image, else the manifest. */
  digest: string;
  /** The image index, for a multi-platform image. */
  index?: OciLayout['index'];
  images: OciArchiveImage[];
}

/** A tar of dir's files, entries named relative to dir, written by the system's tar. */
async function tarDirectory(dir: string, file: string): Promise<void> {
  await run('tar', [
    '-cf',
    file,
    '-C',
    dir,
    '--sort=name',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    'oci-layout',
    'index.json',
    'blobs',
  ]);
}

/**
 * An OCI image layout in a tar, as `skopeo copy ... oci-archive:FILE` writes one: ociLayout's
 * layout (gzip layers; an index for several platforms) with oci-layout, index.json and blobs/ at
 * the archive's root. With tag, index.json's entry carries the org.opencontainers.image.ref.name
 * annotation skopeo writes for `oci-archive:FILE:TAG`.
 */
export async function ociArchive(file: string, images: ImageSpec | ImageSpec[], options: { tag?: string } = {}): Promise<OciArchive> {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-oci-archive-'));
  try {
    const layout = await ociLayout(dir, images);
    if (options.tag) {
      const indexFile = join(dir, 'index.json');
      const index = JSON.parse(await readFile(indexFile, 'utf8')) as { manifests: Record<string, unknown>[] };
      index.manifests[0]!.annotations = { 'org.opencontainers.image.ref.name': options.tag };
      await writeFile(indexFile, JSON.stringify(index));
    }
    await tarDirectory(dir, file);
    const specs = Array.isArray(images) ? images : [images];
    return {
      file,
      digest: layout.digest,
      ...(layout.index ? { index: layout.index } : {}),
      images: layout.images.map((image, i) => ({
        ...image,
        diffIds: specs[i]!.layers.map((layer) => sha256(gunzipSync(layer))),
      })),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const onPath = (program: string): boolean =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, program)));

/** True when skopeo is not installed: tests that need it skip themselves (CI installs it). */
export const missingSkopeo = (): boolean => !onPath('skopeo');

/** Runs skopeo with a throwaway HOME, so no settings or credentials of the user running the tests apply. */
export async function skopeo(args: string[]): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'tarsier-skopeo-'));
  try {
    const { stdout } = await run('skopeo', args, {
      env: { PATH: process.env.PATH, HOME: home, REGISTRY_AUTH_FILE: join(home, 'auth.json') },
      maxBuffer: 64 << 20,
    });
    return stdout;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

export interface SkopeoArchive {
  file: string;
  /** The parsed manifest.json skopeo wrote (one image). */
  manifest: { Config: string; RepoTags: string[] | null; Layers: string[] };
  /** The config's digest (image ID). */
  configDigest: string;
  /** sha256 of each uncompressed layer, base first. */
  layerDigests: string[];
}

/**
 * A docker-archive written by a real producer: ociLayout(image) copied with `skopeo copy
 * oci:DIR docker-archive:FILE:REFERENCE` (skopeo stores the layers uncompressed, as docker save
 * does, but names entries `<hex>.tar` and `<hex>.json`). Only where skopeo is installed (missingSkopeo).
 */
export async function skopeoArchive(file: string, image: ImageSpec, reference = 'tarsier-test/skopeo:latest'): Promise<SkopeoArchive> {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-skopeo-layout-'));
  try {
    await ociLayout(dir, image);
    await rm(file, { force: true });
    await skopeo(['copy', '--quiet', `oci:${dir}`, `docker-archive:${file}:${reference}`]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const { stdout } = await run('tar', ['-xOf', file, 'manifest.json']);
  const [manifest] = JSON.parse(stdout) as SkopeoArchive['manifest'][];
  if (!manifest) throw new Error(`skopeo wrote no image into ${file}`);
  const { stdout: config } = await run('tar', ['-xOf', file, manifest.Config], { encoding: 'buffer', maxBuffer: 64 << 20 });
  const { rootfs } = JSON.parse(config.toString()) as { rootfs: { diff_ids: string[] } };
  return { file, manifest, configDigest: sha256(config), layerDigests: rootfs.diff_ids };
}

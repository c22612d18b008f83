import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  formatPlatform,
  imageEntries,
  InvalidManifest,
  MEDIA_TYPES,
  parseManifest,
  parsePlatform,
  samePlatform,
  selectPlatform,
  type ImageIndex,
  type IndexEntry,
  type Platform,
} from '../registry/manifest.js';
import { ImageArchiveError, type ImageFiles } from './image-files.js';

/**
 * One image out of a `docker save` archive (before Docker 25: manifest.json and per-layer
 * directories; since: an OCI layout plus manifest.json) or an OCI image layout: its digest, the
 * names it was saved under, its platform and its layers, each readable as a stream.
 */

export type LocalImageKind = 'docker-archive' | 'oci-layout';

export interface LocalLayer {
  /** sha256 of the layer's bytes as stored (a docker save layer is an uncompressed tar: its diff ID). */
  digest: string;
  size: number;
  stream(): Readable;
}

export interface LocalImage {
  kind: LocalImageKind;
  /** The manifest digest; the image ID (config digest) for a docker save archive that has no manifest (Docker before 25). */
  digest: string;
  platform: string | null;
  references: string[];
  /** Base first. */
  layers: LocalLayer[];
}

/** The platform images are scanned for when none is asked for: this machine's, if the image has it, else linux/amd64. */
export function machinePlatform(): Platform {
  const architecture: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', s390x: 's390x', ppc64: 'ppc64le' };
  return { os: 'linux', architecture: architecture[process.arch] ?? process.arch };
}

/** The platform scanned when neither the one asked for nor this machine's is there. */
export const FALLBACK_PLATFORM: Platform = { os: 'linux', architecture: 'amd64' };

const sha256 = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** Where an OCI layout keeps the blob with this digest. */
function blobPath(digest: string): string {
  const [algorithm, hex] = digest.split(':');
  if (!algorithm || !hex || !/^[a-z0-9]+$/.test(algorithm) || !/^[a-zA-Z0-9=_-]+$/.test(hex)) {
    throw new ImageArchiveError(`${digest} is not a digest`);
  }
  return `blobs/${algorithm}/${hex}`;
}

function parseJson(bytes: Buffer, name: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new ImageArchiveError(`${name} is not JSON`);
  }
}

function parsed<T>(read: () => T, name: string): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof InvalidManifest) throw new ImageArchiveError(`${name}: ${err.message}`);
    throw err;
  }
}

/** The image in files; wanted chooses among a multi-platform image's platforms. */
export async function readLocalImage(files: ImageFiles, wanted: Platform | undefined): Promise<LocalImage> {
  const index = await files.read('index.json');
  const saved = await files.read('manifest.json');
  const savedEntries = saved ? dockerManifestEntries(saved) : undefined;
  if (!index && !savedEntries) {
    throw new ImageArchiveError('neither an OCI image layout (no index.json) nor a docker save archive (no manifest.json)');
  }
  const image = index ? await fromLayout(files, index, savedEntries, wanted) : await fromDockerSave(files, savedEntries!);
  // A single-platform image asked for as another platform is a mistake to report, not to scan.
  if (wanted && image.platform !== null && !samePlatform(parsePlatform(image.platform), wanted)) {
    throw new ImageArchiveError(`the image is ${image.platform}, not ${formatPlatform(wanted)}`);
  }
  return image;
}

interface SavedImage {
  Config: string;
  RepoTags: string[];
  Layers: string[];
}

/** docker save's manifest.json: one entry per image saved. */
function dockerManifestEntries(bytes: Buffer): SavedImage[] {
  const json = parseJson(bytes, 'manifest.json');
  if (!Array.isArray(json)) throw new ImageArchiveError('manifest.json is not a list of images');
  return json.map((entry: unknown, i) => {
    const e = entry as Partial<Record<keyof SavedImage, unknown>> | null;
    const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
    if (!e || typeof e.Config !== 'string' || !strings(e.Layers)) {
      throw new ImageArchiveError(`manifest.json entry ${i} has no Config and Layers`);
    }
    return { Config: e.Config, Layers: e.Layers, RepoTags: strings(e.RepoTags) ? e.RepoTags : [] };
  });
}

function onlyImage(entries: readonly SavedImage[]): SavedImage {
  if (entries.length === 1) return entries[0]!;
  const names = entries.map((e) => e.RepoTags.join(', ') || e.Config).join('; ');
  throw new ImageArchiveError(
    entries.length === 0
      ? 'manifest.json lists no image'
      : `the archive holds ${entries.length} images (${names}); save one image per archive`,
  );
}

async function layerFile(files: ImageFiles, name: string, digest: string): Promise<LocalLayer> {
  const file = await files.open(name);
  if (!file) throw new ImageArchiveError(`layer ${digest} (${name}) is missing from the archive`);
  return { digest, size: file.size, stream: file.stream };
}

interface ImageConfig {
  platform: string | null;
  diffIds: string[];
}

function imageConfig(bytes: Buffer, name: string): ImageConfig {
  const config = parseJson(bytes, name) as {
    os?: unknown;
    architecture?: unknown;
    variant?: unknown;
    rootfs?: { diff_ids?: unknown };
  } | null;
  const platform =
    config && typeof config.os === 'string' && typeof config.architecture === 'string'
      ? formatPlatform({
          os: config.os,
          architecture: config.architecture,
          ...(typeof config.variant === 'string' ? { variant: config.variant } : {}),
        })
      : null;
  const ids = config?.rootfs?.diff_ids;
  return { platform, diffIds: Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [] };
}

/** Docker before 25: manifest.json, the config as <id>.json, each layer an uncompressed tar named by its diff ID in the config. */
async function fromDockerSave(files: ImageFiles, entries: readonly SavedImage[]): Promise<LocalImage> {
  const image = onlyImage(entries);
  const configBytes = await files.read(image.Config);
  if (!configBytes) throw new ImageArchiveError(`the image config ${image.Config} is missing from the archive`);
  const config = imageConfig(configBytes, image.Config);
  if (config.diffIds.length !== image.Layers.length) {
    throw new ImageArchiveError(`the image config lists ${config.diffIds.length} layers and manifest.json ${image.Layers.length}`);
  }
  return {
    kind: 'docker-archive',
    digest: sha256(configBytes),
    platform: config.platform,
    references: image.RepoTags,
    layers: await Promise.all(image.Layers.map((name, i) => layerFile(files, name, config.diffIds[i]!))),
  };
}

/** A blob of the layout, checked against its digest (the manifest's digest names the image). */
async function blob(files: ImageFiles, digest: string): Promise<Buffer> {
  const bytes = await files.read(blobPath(digest));
  if (!bytes) throw new ImageArchiveError(`blob ${digest} is missing from the layout`);
  if (digest.startsWith('sha256:') && sha256(bytes) !== digest) throw new ImageArchiveError(`blob ${digest} does not match its digest`);
  return bytes;
}

const isIndex = (entry: IndexEntry): boolean => entry.mediaType === MEDIA_TYPES.ociIndex || entry.mediaType === MEDIA_TYPES.dockerList;

/** An image of a multi-platform index: the one asked for, else the machine's, else linux/amd64, else its only image. */
function choosePlatform(index: ImageIndex, wanted: Platform | undefined): IndexEntry {
  const images = imageEntries(index);
  const chosen = wanted
    ? selectPlatform(index, wanted)
    : (selectPlatform(index, machinePlatform()) ??
      selectPlatform(index, FALLBACK_PLATFORM) ??
      (images.length === 1 ? images[0] : undefined));
  if (chosen) return chosen;
  const have = images.map((m) => formatPlatform(m.platform!)).join(', ') || 'none';
  throw new ImageArchiveError(
    wanted
      ? `the image has no ${formatPlatform(wanted)} variant; its platforms: ${have}`
      : `the image has several platforms (${have}); choose one with --platform`,
  );
}

/** The name an index entry gives its image: containerd's full name, else the OCI ref name (a tag). */
function entryName(entry: IndexEntry): string | undefined {
  return entry.annotations?.['io.containerd.image.name'] ?? entry.annotations?.['org.opencontainers.image.ref.name'];
}

/** An OCI image layout, also as Docker 25+ writes it inside a docker save archive (then manifest.json names its tags). */
async function fromLayout(
  files: ImageFiles,
  indexBytes: Buffer,
  saved: readonly SavedImage[] | undefined,
  wanted: Platform | undefined,
): Promise<LocalImage> {
  const top = parsed(() => parseManifest(indexBytes.toString('utf8'), MEDIA_TYPES.ociIndex), 'index.json');
  if (top.kind !== 'index') throw new ImageArchiveError('index.json is not an image index');
  const distinct = [...new Map(top.manifests.map((m) => [m.digest, m])).values()];
  let entry: IndexEntry;
  if (distinct.length === 1) entry = distinct[0]!;
  else if (distinct.every((m) => m.platform !== undefined)) entry = choosePlatform(top, wanted);
  else if (distinct.length === 0) throw new ImageArchiveError('index.json lists no image');
  else {
    const names = distinct.map((m) => entryName(m) ?? m.digest).join(', ');
    throw new ImageArchiveError(`the layout holds ${distinct.length} images (${names}); keep one image per layout or archive`);
  }
  const references = top.manifests.filter((m) => m.digest === entry.digest).flatMap((m) => entryName(m) ?? []);
  // A nested index (a multi-platform image under one tag): one of its platforms.
  let digest = entry.digest;
  const entryText = (await blob(files, digest)).toString('utf8');
  let manifest = parsed(() => parseManifest(entryText, entry.mediaType), digest);
  if (isIndex(entry) || manifest.kind === 'index') {
    if (manifest.kind !== 'index') throw new ImageArchiveError(`${digest} is not an image index`);
    const chosen = choosePlatform(manifest, wanted);
    digest = chosen.digest;
    const text = (await blob(files, digest)).toString('utf8');
    manifest = parsed(() => parseManifest(text, chosen.mediaType), digest);
    if (manifest.kind !== 'manifest') throw new ImageArchiveError(`${digest} is not an image manifest`);
  }
  const image = manifest;
  const config = imageConfig(await blob(files, image.config.digest), image.config.digest);
  const savedAs = saved?.find((s) => s.Config === blobPath(image.config.digest));
  return {
    kind: saved ? 'docker-archive' : 'oci-layout',
    digest,
    platform: config.platform,
    references: savedAs?.RepoTags.length ? savedAs.RepoTags : references,
    layers: await Promise.all(image.layers.map((layer) => layerFile(files, blobPath(layer.digest), layer.digest))),
  };
}

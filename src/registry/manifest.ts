/**
 * Image manifests as registries serve them: Docker's schema 2 manifest and manifest list, and OCI's
 * image manifest and index (the same shapes under other media types). An index (a list) names one
 * manifest per platform; a manifest names the image's config and its layers, bottom first.
 */

export const MEDIA_TYPES = {
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
} as const;

/** What a manifest request accepts: every form above, so the registry never converts. */
export const MANIFEST_ACCEPT = Object.values(MEDIA_TYPES).join(', ');

/** Layer media types whose blobs are the image's file system (compressed or not). */
const FILESYSTEM_LAYER =
  /^application\/vnd\.(?:docker\.image\.rootfs\.(?:foreign\.)?diff\.tar(?:\.gzip)?|oci\.image\.layer\.(?:nondistributable\.)?v1\.tar(?:\+gzip|\+zstd)?)$/;

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  /** Where a foreign (non-distributable) layer is downloaded from instead of the registry. */
  urls?: string[];
}

export interface ImageManifest {
  kind: 'manifest';
  mediaType: string;
  config: Descriptor;
  /** File-system layers, bottom first. */
  layers: Descriptor[];
}

export interface IndexEntry extends Descriptor {
  platform?: Platform;
  annotations?: Record<string, string>;
}

export interface ImageIndex {
  kind: 'index';
  mediaType: string;
  manifests: IndexEntry[];
}

export class InvalidManifest extends Error {}

const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;

function descriptor(value: unknown, where: string): Descriptor {
  const d = value as Partial<Descriptor> | null;
  if (!d || typeof d !== 'object') throw new InvalidManifest(`${where} is not a descriptor object`);
  if (typeof d.mediaType !== 'string') throw new InvalidManifest(`${where}.mediaType is missing`);
  if (typeof d.digest !== 'string' || !DIGEST.test(d.digest)) throw new InvalidManifest(`${where}.digest is not a digest`);
  if (typeof d.size !== 'number' || !Number.isSafeInteger(d.size) || d.size < 0) throw new InvalidManifest(`${where}.size is not a size`);
  return {
    mediaType: d.mediaType,
    digest: d.digest,
    size: d.size,
    ...(Array.isArray(d.urls) && d.urls.every((u) => typeof u === 'string') ? { urls: d.urls } : {}),
  };
}

/**
 * Parses a manifest or index body. contentType is the response's Content-Type; an OCI body may
 * omit mediaType, so the header decides when the body does not say.
 */
export function parseManifest(body: string, contentType?: string): ImageManifest | ImageIndex {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    throw new InvalidManifest('the manifest is not JSON');
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new InvalidManifest('the manifest is not a JSON object');
  const mediaType = typeof json.mediaType === 'string' ? json.mediaType : contentType?.split(';')[0]?.trim();
  if (json.schemaVersion !== 2)
    throw new InvalidManifest(`manifest schema version ${String(json.schemaVersion)} is not supported (only 2)`);

  const isIndex =
    mediaType === MEDIA_TYPES.dockerList || mediaType === MEDIA_TYPES.ociIndex || (!mediaType && Array.isArray(json.manifests));
  if (isIndex) {
    if (!Array.isArray(json.manifests)) throw new InvalidManifest('the index has no manifests list');
    return {
      kind: 'index',
      mediaType: mediaType ?? MEDIA_TYPES.ociIndex,
      manifests: json.manifests.map((m: unknown, i) => {
        const entry = m as { platform?: Partial<Platform>; annotations?: Record<string, string> };
        const platform = entry.platform;
        return {
          ...descriptor(m, `manifests[${i}]`),
          ...(platform && typeof platform.os === 'string' && typeof platform.architecture === 'string'
            ? {
                platform: {
                  os: platform.os,
                  architecture: platform.architecture,
                  ...(platform.variant ? { variant: platform.variant } : {}),
                },
              }
            : {}),
          ...(entry.annotations && typeof entry.annotations === 'object' ? { annotations: entry.annotations } : {}),
        };
      }),
    };
  }
  if (mediaType !== undefined && mediaType !== MEDIA_TYPES.dockerManifest && mediaType !== MEDIA_TYPES.ociManifest) {
    throw new InvalidManifest(`manifest media type ${mediaType} is not supported`);
  }
  if (!Array.isArray(json.layers)) throw new InvalidManifest('the manifest has no layers list');
  const layers = json.layers.map((l: unknown, i) => descriptor(l, `layers[${i}]`));
  const unknown = layers.find((l) => !FILESYSTEM_LAYER.test(l.mediaType));
  if (unknown) throw new InvalidManifest(`layer ${unknown.digest} has media type ${unknown.mediaType}, which is not an image file system`);
  return { kind: 'manifest', mediaType: mediaType ?? MEDIA_TYPES.ociManifest, config: descriptor(json.config, 'config'), layers };
}

/** Parses "os/architecture[/variant]", e.g. linux/arm64/v8. */
export function parsePlatform(text: string): Platform {
  const [os, architecture, variant, ...extra] = text.split('/');
  if (!os || !architecture || extra.length > 0 || variant === '') {
    throw new InvalidManifest(`platform ${JSON.stringify(text)} is not os/architecture[/variant]`);
  }
  return { os, architecture, ...(variant ? { variant } : {}) };
}

/**
 * The variant a platform means when it names none, as containerd normalizes them: arm64 is v8,
 * 32-bit arm is v7; other architectures have no default.
 */
function normalized(p: Platform): Platform {
  const architecture =
    p.architecture === 'aarch64' ? 'arm64' : p.architecture === 'x86_64' || p.architecture === 'x86-64' ? 'amd64' : p.architecture;
  const defaultVariant = architecture === 'arm64' ? 'v8' : architecture === 'arm' ? 'v7' : undefined;
  const variant = p.variant ?? defaultVariant;
  return { os: p.os.toLowerCase(), architecture, ...(variant ? { variant } : {}) };
}

/** Whether two platforms are the same once normalized (arm64 is arm64/v8, x86_64 is amd64). */
export function samePlatform(a: Platform, b: Platform): boolean {
  const [x, y] = [normalized(a), normalized(b)];
  return x.os === y.os && x.architecture === y.architecture && x.variant === y.variant;
}

/** Entries of an index that are images (not build attestations or signatures stored beside them). */
export function imageEntries(index: ImageIndex): IndexEntry[] {
  return index.manifests.filter(
    (m) =>
      m.annotations?.['vnd.docker.reference.type'] !== 'attestation-manifest' &&
      m.platform !== undefined &&
      m.platform.os !== 'unknown' &&
      (m.mediaType === MEDIA_TYPES.dockerManifest || m.mediaType === MEDIA_TYPES.ociManifest),
  );
}

/** The index's image for the platform wanted, or undefined when it has none. */
export function selectPlatform(index: ImageIndex, wanted: Platform): IndexEntry | undefined {
  return imageEntries(index).find((m) => samePlatform(m.platform!, wanted));
}

export const formatPlatform = (p: Platform): string => [p.os, p.architecture, p.variant].filter(Boolean).join('/');

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import type { Registry } from './registry.js';
import { gzip, tarball } from './tarball.js';

/**
 * Real images for tests that push to a real registry (registry.ts): an OCI image layout on disk,
 * written from layer tarballs, and skopeo to push it.
 */

const run = promisify(execFile);

export const OCI_MEDIA_TYPES = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface ImageSpec {
  /** gzip-compressed tar layers, base first. */
  layers: Buffer[];
  /** Defaults to linux/amd64. */
  platform?: Platform;
  /** Fields added to (or replacing) those of the image config this writes. */
  config?: Record<string, unknown>;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

export interface LayoutImage extends Descriptor {
  platform: Platform;
  configDigest: string;
  /** The layers' descriptors, base first. */
  layers: Descriptor[];
}

export interface OciLayout {
  dir: string;
  /** What a tag pushed from this layout points at: the index for a multi-platform image, else the manifest. */
  digest: string;
  /** The image index, when the layout holds a multi-platform image. */
  index?: Descriptor;
  /** One a platform, in the order given. */
  images: LayoutImage[];
}

const sha256 = (data: Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

async function writeBlob(dir: string, mediaType: string, content: Buffer): Promise<Descriptor> {
  const digest = sha256(content);
  await writeFile(join(dir, 'blobs', 'sha256', digest.slice('sha256:'.length)), content);
  return { mediaType, digest, size: content.length };
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

async function writeImage(dir: string, image: ImageSpec): Promise<LayoutImage> {
  const platform = image.platform ?? { os: 'linux', architecture: 'amd64' };
  const layers = await Promise.all(image.layers.map((layer) => writeBlob(dir, OCI_MEDIA_TYPES.layer, layer)));
  const config = await writeBlob(
    dir,
    OCI_MEDIA_TYPES.config,
    json({
      created: '2024-01-01T00:00:00Z',
      ...platform,
      config: {},
      // diff_ids name the uncompressed layers: what a runtime (and a scanner) checks each layer against.
      rootfs: { type: 'layers', diff_ids: image.layers.map((layer) => sha256(gunzipSync(layer))) },
      ...image.config,
    }),
  );
  const manifest = await writeBlob(
    dir,
    OCI_MEDIA_TYPES.manifest,
    json({ schemaVersion: 2, mediaType: OCI_MEDIA_TYPES.manifest, config, layers }),
  );
  return { ...manifest, platform, configDigest: config.digest, layers };
}

/**
 * Writes an OCI image layout into dir (created if needed): one image, or, given an array, a
 * multi-platform image whose index lists one manifest a platform. index.json holds that one
 * manifest or index, which is what `skopeo copy oci:DIR` takes when no reference is named.
 */
export async function ociLayout(dir: string, images: ImageSpec | ImageSpec[]): Promise<OciLayout> {
  await mkdir(join(dir, 'blobs', 'sha256'), { recursive: true });
  await writeFile(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const written: LayoutImage[] = [];
  // One at a time: images may share layers, and two writes of one blob file must not interleave.
  for (const image of Array.isArray(images) ? images : [images]) written.push(await writeImage(dir, image));
  let top: Descriptor = written[0]!;
  let index: Descriptor | undefined;
  if (Array.isArray(images)) {
    index = await writeBlob(
      dir,
      OCI_MEDIA_TYPES.index,
      json({
        schemaVersion: 2,
        mediaType: OCI_MEDIA_TYPES.index,
        manifests: written.map(({ mediaType, digest, size, platform }) => ({ mediaType, digest, size, platform })),
      }),
    );
    top = index;
  }
  const { mediaType, digest, size } = top;
  await writeFile(
    join(dir, 'index.json'),
    JSON.stringify({ schemaVersion: 2, mediaType: OCI_MEDIA_TYPES.index, manifests: [{ mediaType, digest, size }] }),
  );
  return { dir, digest, ...(index ? { index } : {}), images: written };
}

export interface PushOptions {
  /** v2s2: convert a single image to a Docker schema 2 manifest (its digest then differs from the layout's). */
  format?: 'v2s2';
}

/**
 * Pushes the layout's image (every platform of an index) to registry as repository:tag with
 * skopeo, with the registry's credentials unless it is open, and returns the digest skopeo reports
 * for what the tag now points at. Unconverted pushes keep the layout's digests (--preserve-digests,
 * which makes skopeo fail rather than rewrite a manifest).
 */
export async function pushImage(
  registry: Pick<Registry, 'auth' | 'host' | 'username' | 'password'>,
  layoutDir: string,
  repository: string,
  tag: string,
  options: PushOptions = {},
): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), 'tarsier-push-'));
  try {
    const digestFile = join(scratch, 'digest');
    await run(
      'skopeo',
      [
        'copy',
        '--quiet',
        '--all',
        ...(options.format ? ['--format', options.format] : ['--preserve-digests']),
        // The registry speaks plain HTTP; without this skopeo insists on HTTPS.
        '--dest-tls-verify=false',
        ...(registry.auth === 'none' ? [] : ['--dest-creds', `${registry.username}:${registry.password}`]),
        '--digestfile',
        digestFile,
        `oci:${layoutDir}`,
        `docker://${registry.host}/${repository}:${tag}`,
      ],
      // skopeo reads no credentials or registry settings of the user running the tests.
      { env: { PATH: process.env.PATH, HOME: scratch, REGISTRY_AUTH_FILE: join(scratch, 'auth.json') } },
    );
    return (await readFile(digestFile, 'utf8')).trim();
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** A gzip-compressed tar layer holding files (path: content). */
export function layer(files: Record<string, string | Buffer>): Buffer {
  return gzip(tarball(Object.entries(files).map(([path, content]) => ({ path, content }))));
}

/** The repository's real Debian package databases, with the os-release of their release. */
const DEBIAN_RELEASES = {
  7: 'debian-7-wheezy.status',
  8: 'debian-8-jessie.status',
  9: 'debian-9-stretch.status',
  10: 'debian-10-postgresql.status',
} as const;

/**
 * A Debian base layer a scanner recognises: etc/os-release and var/lib/dpkg/status of a real
 * Debian image (test/fixtures), so `pushImage` of `ociLayout(dir, { layers: [debianLayer()] })` puts
 * a scannable image in the registry.
 */
export function debianLayer(release: keyof typeof DEBIAN_RELEASES = 9): Buffer {
  const fixtures = new URL('../fixtures/', import.meta.url);
  return layer({
    'etc/os-release': readFileSync(new URL(`osrelease/debian-${release}/etc/os-release`, fixtures)),
    'var/lib/dpkg/status': readFileSync(new URL(`dpkg/${DEBIAN_RELEASES[release]}`, fixtures)),
  });
}

import { describe, expect, it } from 'vitest';
import {
  formatPlatform,
  imageEntries,
  InvalidManifest,
  MEDIA_TYPES,
  parseManifest,
  parsePlatform,
  selectPlatform,
  type ImageIndex,
} from '../../src/registry/manifest.js';

const digest = (n: number) => `sha256:${n.toString(16).padStart(64, '0')}`;

/** A Docker schema 2 manifest, as `docker push` writes it. */
const dockerManifest = {
  schemaVersion: 2,
  mediaType: MEDIA_TYPES.dockerManifest,
  config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: 1463, digest: digest(1) },
  layers: [
    { mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: 29_124_181, digest: digest(2) },
    { mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: 4_320, digest: digest(3) },
  ],
};

/** An OCI index as BuildKit pushes a multi-platform image: images plus their attestation manifests. */
const buildkitIndex = {
  schemaVersion: 2,
  mediaType: MEDIA_TYPES.ociIndex,
  manifests: [
    { mediaType: MEDIA_TYPES.ociManifest, digest: digest(10), size: 1_017, platform: { architecture: 'amd64', os: 'linux' } },
    { mediaType: MEDIA_TYPES.ociManifest, digest: digest(11), size: 1_017, platform: { architecture: 'arm', os: 'linux', variant: 'v7' } },
    {
      mediaType: MEDIA_TYPES.ociManifest,
      digest: digest(12),
      size: 1_017,
      platform: { architecture: 'arm64', os: 'linux', variant: 'v8' },
    },
    {
      mediaType: MEDIA_TYPES.ociManifest,
      digest: digest(13),
      size: 839,
      annotations: { 'vnd.docker.reference.digest': digest(10), 'vnd.docker.reference.type': 'attestation-manifest' },
      platform: { architecture: 'unknown', os: 'unknown' },
    },
  ],
};

describe('manifests', () => {
  it('reads a Docker schema 2 manifest: config and layers, bottom first', () => {
    const m = parseManifest(JSON.stringify(dockerManifest));
    expect(m).toEqual({
      kind: 'manifest',
      mediaType: MEDIA_TYPES.dockerManifest,
      config: dockerManifest.config,
      layers: dockerManifest.layers,
    });
  });

  it('reads an OCI manifest whose body omits mediaType from the Content-Type, with zstd and foreign layers', () => {
    const body = {
      schemaVersion: 2,
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', size: 7023, digest: digest(1) },
      layers: [
        { mediaType: 'application/vnd.oci.image.layer.v1.tar+zstd', size: 32_654, digest: digest(2) },
        {
          mediaType: 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
          size: 1_000,
          digest: digest(3),
          urls: ['https://mcr.microsoft.com/v2/windows/blobs/x'],
        },
      ],
    };
    const m = parseManifest(JSON.stringify(body), `${MEDIA_TYPES.ociManifest}; charset=utf-8`);
    expect(m.kind).toBe('manifest');
    expect(m.mediaType).toBe(MEDIA_TYPES.ociManifest);
    expect(m.kind === 'manifest' && m.layers.map((l) => l.urls)).toEqual([undefined, ['https://mcr.microsoft.com/v2/windows/blobs/x']]);
  });

  it('reads an index and picks the image of a platform, never an attestation', () => {
    const index = parseManifest(JSON.stringify(buildkitIndex)) as ImageIndex;
    expect(index.kind).toBe('index');
    expect(imageEntries(index).map((m) => formatPlatform(m.platform!))).toEqual(['linux/amd64', 'linux/arm/v7', 'linux/arm64/v8']);
    expect(selectPlatform(index, parsePlatform('linux/amd64'))?.digest).toBe(digest(10));
    // arm64 means v8 and arm means v7 when no variant is named (as containerd matches them).
    expect(selectPlatform(index, parsePlatform('linux/arm64'))?.digest).toBe(digest(12));
    expect(selectPlatform(index, parsePlatform('linux/arm'))?.digest).toBe(digest(11));
    expect(selectPlatform(index, parsePlatform('linux/arm/v6'))).toBeUndefined();
    expect(selectPlatform(index, parsePlatform('windows/amd64'))).toBeUndefined();
    expect(selectPlatform(index, { os: 'unknown', architecture: 'unknown' })).toBeUndefined();
  });

  it('reads a Docker manifest list the same way', () => {
    const list = {
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.dockerList,
      manifests: [
        { mediaType: MEDIA_TYPES.dockerManifest, size: 529, digest: digest(20), platform: { architecture: 'amd64', os: 'linux' } },
      ],
    };
    const index = parseManifest(JSON.stringify(list)) as ImageIndex;
    expect(selectPlatform(index, parsePlatform('linux/amd64'))?.digest).toBe(digest(20));
  });

  it.each([
    ['not JSON', '{', undefined],
    ['schema 1', JSON.stringify({ schemaVersion: 1, fsLayers: [] }), undefined],
    ['unknown media type', JSON.stringify({ ...dockerManifest, mediaType: 'application/vnd.example+json' }), undefined],
    [
      'a Helm chart',
      JSON.stringify({
        ...dockerManifest,
        layers: [{ mediaType: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip', size: 1, digest: digest(4) }],
      }),
      undefined,
    ],
    [
      'a layer without digest',
      JSON.stringify({ ...dockerManifest, layers: [{ mediaType: dockerManifest.layers[0]!.mediaType, size: 1 }] }),
      undefined,
    ],
    ['a negative size', JSON.stringify({ ...dockerManifest, layers: [{ ...dockerManifest.layers[0]!, size: -1 }] }), undefined],
    ['an index without manifests', JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPES.ociIndex }), undefined],
  ])('refuses %s', (_, body, contentType) => {
    expect(() => parseManifest(body, contentType)).toThrow(InvalidManifest);
  });

  it.each(['linux', 'linux/', '/amd64', 'linux/arm/v7/x', 'linux/arm/'])('refuses the platform %j', (text) => {
    expect(() => parsePlatform(text)).toThrow(InvalidManifest);
  });
});

/**
 * klar (github.com/optiopay/klar, read at 4c05f4d8, v2.4.0-11), the most used Clair v1 CI client:
 * its requests replayed byte for byte as its source writes them.
 *
 * - Layer names: docker/docker.go Image.LayerName: the config digest's hex followed by the layer
 *   digest's hex, "sha256:" removed: 128 lowercase hex characters.
 * - clair/api.go apiV1.Push / pushLayer: one POST /v1/layers per layer, base first, with
 *   Content-Type: application/json and every key present: "ParentName":"" on the base layer,
 *   "Features":null, "Headers":{"Authorization": <token, "" for anonymous pulls>}. Only 201 is success.
 * - clair/api.go apiV1.Analyze: GET /v1/layers/<top>?vulnerabilities (the bare flag, no
 *   features); only 200 is success; envelope.Layer must not be null; reads Features[].Name,
 *   Version and Vulnerabilities[].Name, NamespaceName, Description, Link, Severity, Metadata
 *   (an object), FixedBy (clair/clair.go L47-58).
 * - clair/api.go newAPIV1: CLAIR_ADDR is used as given, so "http://host:6060/" gives "//v1/layers".
 * - klar.go: severities are counted by exact name (Unknown … Defcon1).
 * - clair/api.go apiV3 (CLAIR_API_VERSION=3): gRPC, replayed below with a client compiled from the
 *   messages klar was built with.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  clairPre1Client,
  findingsOf,
  findingsOfAncestry,
  INTRODUCED_BY_LAYER,
  TOP_LAYER_FINDINGS,
  world,
  type Image,
  type ImageLayer,
  type World,
} from './harness.js';

const SEVERITIES = ['Unknown', 'Negligible', 'Low', 'Medium', 'High', 'Critical', 'Defcon1'];

const trimDigest = (digest: string): string => digest.replace('sha256:', '');
const layerName = (image: Image, layer: ImageLayer): string => `${trimDigest(image.configDigest)}${trimDigest(layer.digest)}`;

/** klar's push (apiV1.Push): the layers base first, each POSTed with klar's exact body. */
async function push(w: World, token: string, base = w.server): Promise<number[]> {
  const statuses: number[] = [];
  for (const [i, layer] of w.image.layers.entries()) {
    const body = JSON.stringify({
      Layer: {
        Name: layerName(w.image, layer),
        Path: w.blobUrl(layer),
        ParentName: i === 0 ? '' : layerName(w.image, w.image.layers[i - 1]!),
        Format: 'Docker',
        Features: null,
        Headers: { Authorization: token },
      },
    });
    const res = await w.http('POST', `${base.slice(w.server.length)}/v1/layers`, { headers: { 'content-type': 'application/json' }, body });
    statuses.push(res.status);
    if (res.status !== 201) break; // klar stops at the first layer not answered 201
  }
  return statuses;
}

describe('klar (Clair v1 mode)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });

  it('names layers with 128 hex characters, and every POST of a 3-layer image answers exactly 201', async () => {
    expect(layerName(w.image, w.image.layers[2]!)).toMatch(/^[0-9a-f]{128}$/);
    expect(await push(w, w.image.authorization)).toEqual([201, 201, 201]);
    // The registry saw each blob once, with klar's token.
    const downloads = w.registry.requests.filter((r) => r.path.includes('/blobs/'));
    expect(downloads.map((r) => r.headers.authorization)).toEqual([w.image.authorization, w.image.authorization, w.image.authorization]);
    expect(downloads.every((r) => r.headers['user-agent']?.startsWith('tarsier/'))).toBe(true);
  });

  it('GET ?vulnerabilities (no features flag) answers 200 with the features and their vulnerabilities', async () => {
    const top = layerName(w.image, w.image.layers[2]!);
    const res = await w.http('GET', `/v1/layers/${top}?vulnerabilities`);
    expect(res.status).toBe(200);
    expect(res.json.Layer).not.toBeNull();
    expect(findingsOf(res.json.Layer.Features)).toEqual(TOP_LAYER_FINDINGS);
    for (const feature of res.json.Layer.Features) {
      for (const v of feature.Vulnerabilities) {
        expect(typeof v.Name).toBe('string');
        expect(v.NamespaceName).toBe('debian:12');
        expect(SEVERITIES).toContain(v.Severity);
        expect(v.Link).toMatch(/^https:\/\//);
        expect(typeof v.Description).toBe('string');
        if (v.Metadata !== undefined) expect(typeof v.Metadata).toBe('object');
      }
    }
    const openssl = res.json.Layer.Features.find((f: { Name: string }) => f.Name === 'openssl');
    expect(openssl.Vulnerabilities[0].Metadata).toEqual({
      NVD: { CVSSv3: { Score: 5.5, Vectors: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H' } },
    });
  });

  it('a second scan of the image (klar reposts every layer) answers 201 again without downloading again', async () => {
    const before = w.registry.requests.length;
    expect(await push(w, w.image.authorization)).toEqual([201, 201, 201]);
    expect(w.registry.requests.length).toBe(before);
  });

  it('an anonymous pull sends "Authorization": "", which reaches the registry as no credential at all', async () => {
    const open = await world();
    for (const layer of open.image.layers) open.registry.serve(`/v2/${open.image.repository}/blobs/${layer.digest}`, layer.blob);
    expect(await push(open, '')).toEqual([201, 201, 201]);
    const downloads = open.registry.requests.filter((r) => r.path.includes('/blobs/'));
    expect(downloads).toHaveLength(3);
    expect(downloads.every((r) => r.headers.authorization === undefined)).toBe(true);
  });

  it('CLAIR_ADDR with a trailing slash ("//v1/layers") works the same', async () => {
    const slashed = await world();
    expect(await push(slashed, slashed.image.authorization, `${slashed.server}/`)).toEqual([201, 201, 201]);
    const res = await slashed.http('GET', `//v1/layers/${layerName(slashed.image, slashed.image.layers[2]!)}?vulnerabilities`);
    expect(res.status).toBe(200);
    expect(findingsOf(res.json.Layer.Features)).toEqual(TOP_LAYER_FINDINGS);
  });

  it('a refused download is a non-201 with an {"Error":{"Message"}} body klar can print, and nothing is stored', async () => {
    const res = await w.http('POST', '/v1/layers', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        Layer: {
          Name: `${'e'.repeat(128)}`,
          Path: w.blobUrl(w.image.layers[0]!),
          ParentName: '',
          Format: 'Docker',
          Features: null,
          Headers: { Authorization: 'Bearer expired' },
        },
      }),
    });
    expect(res.status).toBe(400);
    expect(res.json.Error.Message).toMatch(/answered 401/);
    expect((await w.http('GET', `/v1/layers/${'e'.repeat(128)}?vulnerabilities`)).status).toBe(404);
  });
});

/**
 * klar with CLAIR_API_VERSION=3 (clair/api.go apiV3, built against quay/clair v3.0.0-pre1): dials
 * CLAIR_ADDR with gRPC (insecure), Push sends one PostAncestryRequest {Format "Docker",
 * AncestryName image.Name, Layers: per FsLayer {Hash LayerName(i), Path "<registry>/<name>/blobs/
 * <digest>", Headers {"Authorization": token}}}; any error fails the scan. Analyze sends
 * GetAncestryRequest {AncestryName image.Name} and reads Ancestry.Layers[].DetectedFeatures[]:
 * Name, Version and each Vulnerability's Name, NamespaceName, Description, Severity, Link, FixedBy.
 */
describe('klar (Clair v3 mode: gRPC on the API port)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });

  const klarPush = (v3: ReturnType<typeof clairPre1Client>, image: Image, token: string) =>
    v3.postAncestry({
      ancestry_name: image.repository,
      format: 'Docker',
      layers: image.layers.map((layer) => ({ hash: layerName(image, layer), path: w.blobUrl(layer), headers: { Authorization: token } })),
    });

  it('PostAncestry then GetAncestry decode as klar decodes them, with every finding of the image', async () => {
    const v3 = clairPre1Client(w.grpcTarget);
    await klarPush(v3, w.image, w.image.authorization);
    const downloads = w.registry.requests.filter((r) => r.path.includes('/blobs/'));
    expect(downloads.map((r) => r.headers.authorization)).toEqual([w.image.authorization, w.image.authorization, w.image.authorization]);
    const ancestry = await v3.getAncestry(w.image.repository);
    expect(ancestry.layers.map((l) => l.layer.hash)).toEqual(w.image.layers.map((layer) => layerName(w.image, layer)));
    expect(findingsOfAncestry(ancestry)).toEqual(TOP_LAYER_FINDINGS);
    for (const layer of ancestry.layers) {
      for (const feature of layer.detected_features) {
        expect(feature.namespace?.name).toBe('debian:12');
        for (const v of feature.vulnerabilities) {
          expect(v.namespace_name).toBe('debian:12');
          expect(SEVERITIES).toContain(v.severity);
          expect(v.link).toMatch(/^https:\/\//);
        }
      }
    }
    // Each feature is listed in the layer that introduced it, as the ancestry API's JSON says.
    const introducedBy = Object.fromEntries(ancestry.layers.flatMap((l, i) => l.detected_features.map((f) => [f.name, i])));
    expect(introducedBy).toEqual(INTRODUCED_BY_LAYER);
  });

  it('an ancestry that was never posted is a NOT_FOUND error, which klar reports', async () => {
    const v3 = clairPre1Client(w.grpcTarget);
    await expect(v3.getAncestry('never/posted')).rejects.toMatchObject({ code: 5 });
  });
});

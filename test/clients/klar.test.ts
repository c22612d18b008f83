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
 * - main.go: API v1 first; when it fails, the same scan again over gRPC (clair/api.go apiV3),
 *   replayed below with a client compiled from the Clair messages klar vendors.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  clairEarlyClient,
  clairPre1Client,
  findingsOf,
  findingsOfAncestry,
  INTRODUCED_BY_LAYER,
  TOP_LAYER_FINDINGS,
  world,
  type EarlyGetAncestryResponse,
  type Image,
  type ImageLayer,
  type PostAncestryRequest,
  type World,
} from './harness.js';

const SEVERITIES = ['Unknown', 'Negligible', 'Low', 'Medium', 'High', 'Critical', 'Defcon1'];

const trimDigest = (digest: string): string => digest.replace('sha256:', '');
const layerName = (image: Image, layer: ImageLayer): string => `${trimDigest(image.configDigest)}${trimDigest(layer.digest)}`;

/**
 * klar's findings (clair/clair.go Vulnerability) with the fields both of its modes fill in: v1's
 * Analyze from the layer's Features, gRPC's from GetAncestryResponse.Ancestry.Features
 * (convertVulnerability), each with its feature's name and version. Sorted, to compare.
 */
interface KlarFinding {
  FeatureName: string;
  FeatureVersion: string;
  Name: string;
  NamespaceName: string;
  Description: string;
  Severity: string;
  Link: string;
  FixedBy: string;
}

const sortedFindings = (findings: KlarFinding[]): KlarFinding[] =>
  findings.sort((a, b) => `${a.FeatureName} ${a.Name}`.localeCompare(`${b.FeatureName} ${b.Name}`));

/** klar's PostAncestryRequest (apiV3.Push): every layer, as v1 names it, downloaded with the pull token. */
const klarAncestry = (w: World, image: Image, token: string): PostAncestryRequest => ({
  ancestry_name: image.repository,
  format: 'Docker',
  layers: image.layers.map((layer) => ({ hash: layerName(image, layer), path: w.blobUrl(layer), headers: { Authorization: token } })),
});

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

/** apiV1.Analyze: GET ?vulnerabilities of the top layer, each feature's vulnerabilities as findings. */
async function v1Findings(w: World): Promise<KlarFinding[]> {
  const res = await w.http('GET', `/v1/layers/${layerName(w.image, w.image.layers.at(-1)!)}?vulnerabilities`);
  expect(res.status).toBe(200);
  const features = res.json.Layer.Features as Array<{ Name: string; Version: string; Vulnerabilities?: Array<Record<string, string>> }>;
  return sortedFindings(
    features.flatMap((f) =>
      (f.Vulnerabilities ?? []).map((v) => ({
        FeatureName: f.Name,
        FeatureVersion: f.Version,
        Name: v.Name ?? '',
        NamespaceName: v.NamespaceName ?? '',
        Description: v.Description ?? '',
        Severity: v.Severity ?? '',
        Link: v.Link ?? '',
        FixedBy: v.FixedBy ?? '',
      })),
    ),
  );
}

/** apiV3.Analyze: every feature's vulnerabilities as findings. */
function v3Findings(response: EarlyGetAncestryResponse): KlarFinding[] {
  return sortedFindings(
    response.ancestry!.features.flatMap((f) =>
      f.vulnerabilities.map((v) => ({
        FeatureName: f.name,
        FeatureVersion: f.version,
        Name: v.name,
        NamespaceName: v.namespace_name,
        Description: v.description,
        Severity: v.severity,
        Link: v.link,
        FixedBy: v.fixed_by,
      })),
    ),
  );
}

/** The ancestry's features at field 2, in findingsOf's shape. */
const imageFindings = (response: EarlyGetAncestryResponse) =>
  findingsOf(
    response.ancestry!.features.map((f) => ({
      Name: f.name,
      Version: f.version,
      Vulnerabilities: f.vulnerabilities.map((v) => ({ Name: v.name, FixedBy: v.fixed_by || undefined })),
    })),
  );

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
 * Released klar over gRPC (main.go: after API v1 fails; clair/api.go apiV3), with the messages it
 * vendors: quay/clair api/v3/clairpb at b1cd0923 (clair-v3-b1cd0923.proto), over grpc-go 1.9.0-dev
 * (user-agent grpc-go/1.9.0-dev), dialled insecure at CLAIR_ADDR (port 6060 when none is given).
 * Push sends one PostAncestryRequest {AncestryName image.Name, Format "Docker", Layers: per FsLayer
 * {Hash LayerName(i), Path "<registry>/<name>/blobs/<digest>", Headers {"Authorization": token}}}
 * (fields 1, 2, 3 {1, 2, 3}); any error fails the scan. Analyze sends GetAncestryRequest
 * {AncestryName image.Name, WithVulnerabilities true, WithFeatures true} (fields 1, 2, 3) and reads
 * only GetAncestryResponse.Ancestry (1).Features (2): each Feature's Name (1), Version (3) and its
 * Vulnerabilities (5): Name (1), NamespaceName (2), Description (3), Link (4), Severity (5),
 * FixedBy (7). A features list read empty is "Found 0 vulnerabilities" and exit 0.
 */
describe('klar (released: gRPC on the API port, Clair messages of b1cd0923)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });

  it('finds over gRPC every finding its v1 mode finds, and reads the layers it posted', async () => {
    expect(await push(w, w.image.authorization)).toEqual([201, 201, 201]);
    const viaV1 = await v1Findings(w);
    expect(viaV1).toHaveLength(3);

    const v3 = clairEarlyClient(w.grpcTarget);
    await v3.postAncestry(klarAncestry(w, w.image, w.image.authorization));
    const response = await v3.getAncestry({ ancestry_name: w.image.repository, with_vulnerabilities: true, with_features: true });
    expect(v3Findings(response)).toEqual(viaV1);
    expect(imageFindings(response)).toEqual(TOP_LAYER_FINDINGS);
    expect(response.ancestry!.features.every((f) => f.namespace_name === 'debian:12' && f.version_format === 'dpkg')).toBe(true);
    // Field 3: the layers as klar named them, base first, not pre1's layers read as hashes.
    expect(response.ancestry!.layers.map((l) => l.hash)).toEqual(w.image.layers.map((layer) => layerName(w.image, layer)));
    expect(response.status?.listers).toEqual(['dpkg', 'rpm', 'apk']);
    expect(response.ancestry!.scanned_detectors).toContain('os-release');
  });

  it("either flag alone gets every feature with its vulnerabilities (Clair's early server sent features for either)", async () => {
    const v3 = clairEarlyClient(w.grpcTarget);
    await v3.postAncestry(klarAncestry(w, w.image, w.image.authorization));
    for (const flag of ['with_vulnerabilities', 'with_features']) {
      const response = await v3.getAncestry({ ancestry_name: w.image.repository, [flag]: true });
      expect(imageFindings(response), flag).toEqual(TOP_LAYER_FINDINGS);
    }
  });

  it('an ancestry that was never posted is a NOT_FOUND error, which klar reports', async () => {
    const v3 = clairEarlyClient(w.grpcTarget);
    await expect(v3.getAncestry({ ancestry_name: 'never/posted', with_vulnerabilities: true, with_features: true })).rejects.toMatchObject({
      code: 5,
    });
  });
});

/**
 * klar built from its pull request #175, on quay/clair v3.0.0-pre1 (clair-v3.0.0-pre1.proto):
 * the same PostAncestryRequest; GetAncestryRequest {AncestryName image.Name} alone, reading
 * Ancestry.Layers (3)[].DetectedFeatures[]: Name, Version and each Vulnerability's Name,
 * NamespaceName, Description, Severity, Link, FixedBy.
 */
describe('klar (pull request #175: gRPC with Clair v3.0.0-pre1 messages)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });

  it('PostAncestry then GetAncestry decode as klar decodes them, with every finding of the image', async () => {
    const v3 = clairPre1Client(w.grpcTarget);
    await v3.postAncestry(klarAncestry(w, w.image, w.image.authorization));
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

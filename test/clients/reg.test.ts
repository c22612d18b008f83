/**
 * genuinetools/reg (read at efad427c, = v0.16.1 for clair/, vulns.go): `reg vulns` in its Clair v1
 * mode (the one it falls back to when its v3 gRPC scan fails), then its v3 mode below.
 *
 * - clair/layerutil.go NewClairLayer: the layer Name is the digest with its prefix
 *   ("sha256:<hex>"), sent with a literal ":" in the URL path; every field is omitempty, so the
 *   base layer has no ParentName key and Headers is absent when the registry needs none.
 * - clair/vulns.go Vulnerabilities: POSTs base first (clair/layer.go PostLayer, Content-Type:
 *   application/json; keys in struct order Name, Path, Headers, ParentName, Format), then
 *   GET /v1/layers/<top>?features=true&vulnerabilities=true (clair/layer.go GetLayer).
 * - clair/errortransport.go: any status >= 500 is an error; below it, the body must be JSON
 *   without an "Error" key (clair/clair.go getJSON), and a GET's Layer must not be null.
 * - clair/layer.go DeleteLayer (library only): 200, 202 and 404 are success.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { clairPre1Client, findingsOf, findingsOfAncestry, TOP_LAYER_FINDINGS, world, type World } from './harness.js';

/** reg's verdict on an answer (ErrorTransport + getJSON). */
function regAccepts(res: { status: number; json: unknown }): boolean {
  return res.status < 500 && typeof res.json === 'object' && res.json !== null && !('Error' in res.json);
}

describe('reg (Clair v1 API)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });

  it('posts each layer named by its digest, base first, without ParentName on the base', async () => {
    for (const [i, layer] of w.image.layers.entries()) {
      const body = JSON.stringify({
        Layer: {
          Name: layer.digest,
          Path: w.blobUrl(layer),
          Headers: { Authorization: w.image.authorization },
          ...(i > 0 ? { ParentName: w.image.layers[i - 1]!.digest } : {}),
          Format: 'Docker',
        },
      });
      const res = await w.http('POST', '/v1/layers', { headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(201);
      expect(regAccepts(res)).toBe(true);
      expect(res.json.Layer.Name).toBe(layer.digest);
    }
  });

  it('GET /v1/layers/sha256:<hex>?features=true&vulnerabilities=true, with the ":" unescaped, reports the image', async () => {
    const res = await w.http('GET', `/v1/layers/${w.image.layers[2]!.digest}?features=true&vulnerabilities=true`);
    expect(res.status).toBe(200);
    expect(regAccepts(res)).toBe(true);
    expect(res.json.Layer.Name).toBe(w.image.layers[2]!.digest);
    expect(findingsOf(res.json.Layer.Features)).toEqual(TOP_LAYER_FINDINGS);
    // reg's bad-vulnerability count: High, Critical and Defcon1.
    const severities = res.json.Layer.Features.flatMap((f: { Vulnerabilities: Array<{ Severity: string }> }) =>
      f.Vulnerabilities.map((v) => v.Severity),
    );
    expect(severities.filter((s: string) => ['High', 'Critical', 'Defcon1'].includes(s))).toHaveLength(2);
  });

  it('a layer posted without Name (reg after skipping an empty layer) is refused in the envelope reg reads', async () => {
    const res = await w.http('POST', '/v1/layers', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ Layer: { Path: `${w.registry.origin}/v2/${w.image.repository}/blobs/`, Format: 'Docker' } }),
    });
    expect(res.status).toBe(400);
    expect(regAccepts(res)).toBe(false);
    expect(res.json.Error.Message).toBe('Layer.Name is required');
  });

  it('DeleteLayer: 200 for a layer, then 404 (both success for reg), each with a JSON body or none', async () => {
    const top = w.image.layers[2]!.digest;
    const first = await w.http('DELETE', `/v1/layers/${top}`);
    expect(first.status).toBe(200);
    expect(first.text).toBe('');
    const again = await w.http('DELETE', `/v1/layers/${top}`);
    expect(again.status).toBe(404);
    expect(again.json).toEqual({ Error: { Message: `layer ${top} does not exist` } });
  });
});

/**
 * `reg vulns` tries Clair v3 first (vulns.go: VulnerabilitiesV3, falling back to v1 on any error),
 * built against coreos/clair 94150ab1 (the v3.0.0-pre1 messages). clair/layerutil.go getLayers and
 * NewClairV3Layer: the ancestry is named by the image's config digest; layers go base first, each
 * with Hash = its digest, Path = "<registry URL>/v2/<repo>/blobs/<digest>" and Headers
 * {"Authorization": "Bearer <token>"} (an empty map for an anonymous pull); clair/ancestry.go
 * PostAncestry sends Format "Docker"; GetAncestry reads Layers[].DetectedFeatures[].Vulnerabilities.
 */
describe('reg (Clair v3 API: gRPC on the API port)', () => {
  it('scans over gRPC, so reg never falls back to v1, and finds every vulnerability of the image', async () => {
    const w = await world();
    const v3 = clairPre1Client(w.grpcTarget);
    const layers = w.image.layers.map((layer) => ({
      hash: layer.digest,
      path: w.blobUrl(layer),
      headers: { Authorization: w.image.authorization },
    }));
    await v3.postAncestry({ ancestry_name: w.image.configDigest, format: 'Docker', layers });
    const ancestry = await v3.getAncestry(w.image.configDigest);
    expect(ancestry.name).toBe(w.image.configDigest);
    expect(findingsOfAncestry(ancestry)).toEqual(TOP_LAYER_FINDINGS);
    const severities = ancestry.layers.flatMap((l) => l.detected_features.flatMap((f) => f.vulnerabilities.map((v) => v.severity)));
    expect(severities.filter((s) => ['High', 'Critical', 'Defcon1'].includes(s))).toHaveLength(2);
  });

  it('an anonymous pull (an empty Headers map) downloads without a credential', async () => {
    const w = await world();
    for (const layer of w.image.layers) w.registry.serve(`/v2/${w.image.repository}/blobs/${layer.digest}`, layer.blob);
    const v3 = clairPre1Client(w.grpcTarget);
    const layers = w.image.layers.map((layer) => ({ hash: layer.digest, path: w.blobUrl(layer), headers: {} }));
    await v3.postAncestry({ ancestry_name: w.image.configDigest, format: 'Docker', layers });
    const downloads = w.registry.requests.filter((r) => r.path.includes('/blobs/'));
    expect(downloads).toHaveLength(3);
    expect(downloads.every((r) => r.headers.authorization === undefined)).toBe(true);
    expect(findingsOfAncestry(await v3.getAncestry(w.image.configDigest))).toEqual(TOP_LAYER_FINDINGS);
  });
});

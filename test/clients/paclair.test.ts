/**
 * paclair (yebinama/paclair at v3.2.1, eff5607), its Docker plugin against both APIs:
 *
 * - paclair/ancestries/docker.py DockerAncestry: layer names "<digest>_<short sha>" where
 *   short sha = sha256 of the joined digests, first 12 hex (docker_image.py); 84 characters with a
 *   ":"; the ancestry is named after the top layer; Headers {"Authorization": "Bearer <token>"}.
 * - paclair/api/abstract_clair_requests.py _request: any status below 400 is success; a 404 is
 *   recognised only by its reason phrase "Not Found"; names go into URLs unescaped.
 * - v1 (paclair/api/clair_requests_v1.py): POST /v1/layers per layer, base first, body keys Name,
 *   Path, Format, then ParentName (the previous paclair name) and Headers; analyse: one
 *   GET /v1/layers/<top>?features&vulnerabilities; delete: DELETE per layer, top first. stats
 *   count the Severity of vulnerabilities that have a FixedBy key.
 * - v3 (paclair/api/clair_requests_v3.py): one POST /ancestry {"ancestry_name": <name with ":"
 *   replaced by "_">, "format": "Docker", "layers": [{"hash": <digest, ":" kept>, "path",
 *   "headers"}]} ("headers": null when there are none, paclair_tests/test_clair_requests_v3.py);
 *   analyse: GET /ancestry/<name>?with_vulnerabilities=1&with_features=1, reading
 *   ancestry.layers[].layer.hash and detected_features[].vulnerabilities[] (name, severity and
 *   the presence of fixed_by); metadata is JSON text.
 */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { findingsOf, INTRODUCED_BY_LAYER, TOP_LAYER_FINDINGS, world, type World } from './harness.js';

function paclairNames(w: World): string[] {
  const shortSha = createHash('sha256')
    .update(w.image.layers.map((l) => l.digest).join(''))
    .digest('hex')
    .slice(0, 12);
  return w.image.layers.map((l) => `${l.digest}_${shortSha}`);
}

/** paclair's stats: severities of the vulnerabilities that carry a fix. */
function stats(vulnerabilities: Array<Record<string, unknown>>, fixKey: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of vulnerabilities)
    if (fixKey in v) counts[String(v.Severity ?? v.severity)] = (counts[String(v.Severity ?? v.severity)] ?? 0) + 1;
  return counts;
}

describe('paclair, Clair v1 API', () => {
  let w: World;
  let names: string[];
  beforeAll(async () => {
    w = await world();
    names = paclairNames(w);
  });

  it('push: POST per layer, base first, ParentName the previous paclair name; every answer below 400', async () => {
    expect(names[2]).toHaveLength(84);
    for (const [i, layer] of w.image.layers.entries()) {
      const body = JSON.stringify({
        Layer: {
          Name: names[i],
          Path: w.blobUrl(layer),
          Format: 'Docker',
          ...(i > 0 ? { ParentName: names[i - 1] } : {}),
          Headers: { Authorization: w.image.authorization },
        },
      });
      const res = await w.http('POST', '/v1/layers', { headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBeLessThan(400);
    }
  });

  it('analyse: one GET ?features&vulnerabilities of the top layer; stats count the fixable findings', async () => {
    const res = await w.http('GET', `/v1/layers/${names[2]}?features&vulnerabilities`);
    expect(res.status).toBeLessThan(400);
    expect(findingsOf(res.json.Layer.Features)).toEqual(TOP_LAYER_FINDINGS);
    const vulnerabilities = res.json.Layer.Features.flatMap((f: { Vulnerabilities: unknown[] }) => f.Vulnerabilities);
    expect(stats(vulnerabilities, 'FixedBy')).toEqual({ Low: 1, High: 1 });
  });

  it('delete: DELETE per layer, top first, each below 400; then a 404 whose reason phrase is "Not Found"', async () => {
    for (const name of [...names].reverse()) expect((await w.http('DELETE', `/v1/layers/${name}`)).status).toBeLessThan(400);
    const gone = await w.http('DELETE', `/v1/layers/${names[0]}`);
    expect([gone.status, gone.statusText]).toEqual([404, 'Not Found']);
  });
});

describe('paclair, Clair v3 API (the ancestry API as grpc-gateway JSON)', () => {
  let w: World;
  let ancestry: string;
  beforeAll(async () => {
    w = await world();
    ancestry = paclairNames(w)[2]!.replace(/:/g, '_');
  });

  it('push: one POST /ancestry with ":" replaced in the name, kept in the hashes, answered below 400', async () => {
    const body = JSON.stringify({
      ancestry_name: ancestry,
      format: 'Docker',
      layers: w.image.layers.map((layer) => ({
        hash: layer.digest,
        path: w.blobUrl(layer),
        headers: { Authorization: w.image.authorization },
      })),
    });
    const res = await w.http('POST', '/ancestry', { headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBeLessThan(400);
    expect(res.json.status.listers).toContain('dpkg');
  });

  it('a layer posted with "headers": null (the Http plugin) is downloaded without headers', async () => {
    const open = await world();
    const layer = open.image.layers[0]!;
    open.registry.serve('/public/base.tar.gz', layer.blob);
    const res = await open.http('POST', '/ancestry', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ancestry_name: 'base',
        format: 'Docker',
        layers: [{ hash: 'base', path: open.registry.url('/public/base.tar.gz'), headers: null }],
      }),
    });
    expect(res.status).toBeLessThan(400);
    const download = open.registry.requests.find((r) => r.path === '/public/base.tar.gz');
    expect(download?.headers.authorization).toBeUndefined();
  });

  it('analyse: GET /ancestry/<name>?with_vulnerabilities=1&with_features=1; fixed_by only where a fix exists', async () => {
    const res = await w.http('GET', `/ancestry/${ancestry}?with_vulnerabilities=1&with_features=1`);
    expect(res.status).toBeLessThan(400);
    const layers = res.json.ancestry.layers as Array<{ layer: { hash: string }; detected_features?: Array<Record<string, any>> }>;
    expect(layers.map((l) => l.layer.hash)).toEqual(w.image.layers.map((l) => l.digest));
    const introducedAt = Object.fromEntries(layers.flatMap((l, i) => (l.detected_features ?? []).map((f) => [f.name, i])));
    expect(introducedAt).toEqual(INTRODUCED_BY_LAYER);
    const features = layers.flatMap((l) => l.detected_features ?? []);
    const findings = Object.fromEntries(
      features.map((f) => [
        f.name,
        {
          version: f.version,
          vulnerabilities: Object.fromEntries(
            (f.vulnerabilities ?? []).map((v: { name: string; fixed_by?: string }) => [v.name, v.fixed_by ?? null]),
          ),
        },
      ]),
    );
    expect(findings).toEqual(TOP_LAYER_FINDINGS);
    const vulnerabilities = features.flatMap((f) => f.vulnerabilities ?? []);
    expect(stats(vulnerabilities, 'fixed_by')).toEqual({ Low: 1, High: 1 });
    const withMetadata = vulnerabilities.find((v) => v.name === 'CVE-2024-0727');
    expect(JSON.parse(withMetadata.metadata)).toEqual({
      NVD: { CVSSv3: { Score: 5.5, Vectors: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H' } },
    });
  });

  it('an unknown ancestry is a 404 with the reason phrase "Not Found"', async () => {
    const res = await w.http('GET', '/ancestry/sha256_unknown?with_vulnerabilities=1&with_features=1');
    expect([res.status, res.statusText, res.json.code]).toEqual([404, 'Not Found', 5]);
  });
});

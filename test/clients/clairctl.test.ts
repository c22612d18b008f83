/**
 * clairctl (jgsqware/clairctl at c96272e, = v1.2.8; its forks speak the same v1 API — no clairctl
 * speaking the ancestry API was found):
 *
 * - clair/push.go pushLayer: POST /v1/layers per layer, base first (schema 2), Content-Type:
 *   application/json, body keys Name, Path, Headers, ParentName, Format (omitempty: no ParentName on
 *   the base). Name = the digest "sha256:<hex>". auth() always sets Headers {"Authorization":
 *   <value>} — "" when the registry needed none — and when its HEAD fails the body is `{}`.
 *   Only 201 is success; 422 is logged and the next layer gets no parent (layering.go pushAll).
 * - clair/analyze.go analyzeLayer: GET /v1/layers/<name>?vulnerabilities (no features flag), top
 *   layer first, each needing 200; reads Layer.Name, Features[].Name, Version and
 *   Vulnerabilities[].Name, NamespaceName, Severity, Description, Link.
 * - clair/delete.go deleteLayer: DELETE per layer, top first; 200 is success, failures are logged.
 * - Schema-1 images are pushed without de-duplication: the same Name is POSTed again.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { findingsOf, TOP_LAYER_FINDINGS, world, type World } from './harness.js';

describe('clairctl (Clair v1 API)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });

  const push = async (authorization: string): Promise<number[]> => {
    const statuses: number[] = [];
    let parent = '';
    for (const layer of w.image.layers) {
      const body = JSON.stringify({
        Layer: {
          Name: layer.digest,
          Path: w.blobUrl(layer),
          Headers: { Authorization: authorization },
          ...(parent ? { ParentName: parent } : {}),
          Format: 'Docker',
        },
      });
      const res = await w.http('POST', '/v1/layers', { headers: { 'content-type': 'application/json' }, body });
      statuses.push(res.status);
      parent = res.status === 201 ? layer.digest : '';
    }
    return statuses;
  };

  it('push: three POSTs, each exactly 201; a repeated push (schema-1 duplicates) is 201 again', async () => {
    expect(await push(w.image.authorization)).toEqual([201, 201, 201]);
    expect(await push(w.image.authorization)).toEqual([201, 201, 201]);
  });

  it('analyze: GET ?vulnerabilities for each layer, top first, each exactly 200 with the report', async () => {
    const reports = [];
    for (const layer of [...w.image.layers].reverse()) {
      const res = await w.http('GET', `/v1/layers/${layer.digest}?vulnerabilities`);
      expect(res.status).toBe(200);
      expect(res.json.Layer.Name).toBe(layer.digest);
      reports.push(res.json.Layer);
    }
    expect(findingsOf(reports[0].Features)).toEqual(TOP_LAYER_FINDINGS);
    for (const v of reports.flatMap((l) => l.Features.flatMap((f: { Vulnerabilities: unknown[] }) => f.Vulnerabilities))) {
      expect(v).toMatchObject({
        Name: expect.any(String),
        NamespaceName: 'debian:12',
        Severity: expect.any(String),
        Link: expect.any(String),
      });
    }
  });

  it('the body clairctl sends when its registry check fails, {}, is a 400 in the v1 envelope and stores nothing', async () => {
    const res = await w.http('POST', '/v1/layers', { headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ Error: { Message: 'Layer is required' } });
  });

  it('a layer that is not an archive is a 422, and the next layer (posted without a parent) still indexes', async () => {
    w.registry.serve('/v2/team/app/blobs/sha256:not-a-layer', Buffer.from('<html>login</html>'));
    const broken = await w.http('POST', '/v1/layers', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        Layer: {
          Name: 'sha256:not-a-layer',
          Path: `${w.registry.origin}/v2/team/app/blobs/sha256:not-a-layer`,
          Headers: { Authorization: '' },
          Format: 'Docker',
        },
      }),
    });
    expect(broken.status).toBe(422);
    expect(broken.json.Error.Message).toEqual(expect.any(String));
  });

  it('delete: DELETE each layer, top first, each 200; afterwards none is left', async () => {
    const statuses = [];
    for (const layer of [...w.image.layers].reverse()) statuses.push((await w.http('DELETE', `/v1/layers/${layer.digest}`)).status);
    expect(statuses).toEqual([200, 200, 200]);
    for (const layer of w.image.layers) expect((await w.http('GET', `/v1/layers/${layer.digest}?vulnerabilities`)).status).toBe(404);
  });
});

/**
 * Quay's Clair v2 security worker (quay/quay at 8d57e769, the last revision with
 * util/secscan/analyzer.py):
 *
 * - util/secscan/api.py compute_layer_id: Name = "<docker image id>.<storage uuid4>", 101
 *   characters with one "."; _new_analyze_request: {"Layer":{"Name","Path","Format":"Docker"}},
 *   "Headers" only when Path is a registry URL (a presigned storage URL carries its own
 *   credentials in its query string), "ParentName" absent on the base layer.
 * - util/secscan/api.py _request: every call carries Connection: close and, through jwtproxy,
 *   Authorization: Bearer <JWT>; any 2xx is success.
 * - api.py analyze_layer: a 2xx body must be JSON with Layer.IndexedByVersion, stored as the
 *   layer's engine version; below 3 (config.py SECURITY_SCANNER_ENGINE_VERSION_TARGET) the layer
 *   is posted again on every pass. A 400 whose Message is exactly
 *   "worker: parent layer is unknown, it must be processed first" makes the analyzer re-post the
 *   whole chain from the base (analyzer.py analyze_recursively, force_parents). Error bodies must
 *   be {"Error":{"Message"}} (it reads .get("Error").get("Message")).
 * - api.py _get_layer_data: ?vulnerabilities=True or ?features=True (one flag, value "True");
 *   404 means "not indexed"; every feature must have Name, VersionFormat, NamespaceName, AddedBy
 *   and Version (data/secscan_model/datatypes.py SecurityInformation.from_dict).
 * - api.py ping: GET /v1/metrics must answer 200.
 * - workers/security_notification_worker.py + util/secscan/notifier.py: on the webhook, GET
 *   /v1/notifications/<name>?limit=1000, then &page=<NextPage> until the NextPage key is absent;
 *   New.Vulnerability is required; Old must be absent (not null) for a new vulnerability;
 *   OrderedLayersIntroducingVulnerability indexes ascend and are equal for a layer on both sides;
 *   each layer name splits on "." into (docker image id, uuid); a tag is vulnerable when
 *   GET /v1/layers/<its top layer>?vulnerabilities=True lists New.Vulnerability.Name; then
 *   DELETE /v1/notifications/<name> (any 2xx).
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { findingsOf, TOP_LAYER_FINDINGS, world, type World } from './harness.js';

const ENGINE_VERSION_TARGET = 3;
const PARENT_UNKNOWN = 'worker: parent layer is unknown, it must be processed first';
/** What jwtproxy and requests add to every call Quay makes to the scanner. */
const QUAY_HEADERS = { connection: 'close', authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJxdWF5In0.c2ln' };

describe('Quay security worker (Clair v2 API)', () => {
  let w: World;
  /** Quay's layer ids, base first: docker image id (64 hex) "." storage uuid. */
  let ids: string[];

  /** A presigned storage URL for a blob: the registry serves the path; the query is the signature. */
  const storageUrl = (i: number): string => {
    const layer = w.image.layers[i]!;
    const path = `/storage/sha256/${layer.hex.slice(0, 2)}/${layer.hex}`;
    w.registry.serve(path, layer.blob);
    return w.registry.url(`${path}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=600&X-Amz-Signature=${'5'.repeat(64)}`);
  };

  const analyzeRequest = (i: number): string =>
    JSON.stringify({ Layer: { Name: ids[i], Path: storageUrl(i), Format: 'Docker', ...(i > 0 ? { ParentName: ids[i - 1] } : {}) } });

  const post = (i: number) =>
    w.http('POST', '/v1/layers', { headers: { ...QUAY_HEADERS, 'content-type': 'application/json' }, body: analyzeRequest(i) });

  beforeAll(async () => {
    w = await world();
    await w.startNotifier();
    ids = w.image.layers.map((layer) => `${layer.hex.split('').reverse().join('')}.${randomUUID()}`);
  });

  it('answers the ping: GET /v1/metrics is 200', async () => {
    expect((await w.http('GET', '/v1/metrics', { headers: QUAY_HEADERS })).status).toBe(200);
  });

  it('a layer whose parent is not indexed: 400 with the exact message that makes Quay re-post the chain, then the chain indexes', async () => {
    expect(ids[2]).toHaveLength(101);
    const orphan = await post(2);
    expect(orphan.status).toBe(400);
    expect(orphan.json.Error.Message).toBe(PARENT_UNKNOWN);
    // force_parents: the whole chain again, from the base.
    for (const i of [0, 1, 2]) {
      const res = await post(i);
      expect(Math.floor(res.status / 100)).toBe(2);
      expect(res.json.Layer.IndexedByVersion).toBeGreaterThanOrEqual(ENGINE_VERSION_TARGET);
    }
  });

  it('reads the top layer with ?vulnerabilities=True and with ?features=True, every feature carrying the keys Quay requires', async () => {
    const withVulnerabilities = await w.http('GET', `/v1/layers/${ids[2]}?vulnerabilities=True`, { headers: QUAY_HEADERS });
    expect(withVulnerabilities.status).toBe(200);
    expect(findingsOf(withVulnerabilities.json.Layer.Features)).toEqual(TOP_LAYER_FINDINGS);
    const features = await w.http('GET', `/v1/layers/${ids[2]}?features=True`, { headers: QUAY_HEADERS });
    expect(features.status).toBe(200);
    for (const res of [withVulnerabilities, features]) {
      for (const f of res.json.Layer.Features) {
        for (const key of ['Name', 'VersionFormat', 'NamespaceName', 'AddedBy', 'Version']) expect(f, key).toHaveProperty(key);
        expect(ids).toContain(f.AddedBy);
      }
    }
    expect(features.json.Layer.Features.every((f: { Vulnerabilities?: unknown }) => f.Vulnerabilities === undefined)).toBe(true);
    const missing = await w.http('GET', `/v1/layers/${'0'.repeat(64)}.${randomUUID()}?vulnerabilities=True`, { headers: QUAY_HEADERS });
    expect(missing.status).toBe(404);
    expect(missing.json.Error.Message).toMatch(/does not exist/);
  });

  /** The notification worker: every page until NextPage is absent, then Quay's checks. */
  async function readNotification(name: string) {
    const pages = [];
    let page: string | undefined;
    for (;;) {
      const query = page === undefined ? 'limit=1000' : `limit=1000&page=${encodeURIComponent(page)}`;
      const res = await w.http('GET', `/v1/notifications/${name}?${query}`, { headers: QUAY_HEADERS });
      expect(res.status).toBe(200);
      pages.push(res.json.Notification);
      if (!('NextPage' in res.json.Notification)) break;
      page = res.json.Notification.NextPage;
    }
    return pages;
  }

  it('a new vulnerability: the webhook, one page, New only, layer ids that split into (image id, uuid), a vulnerable tag, DELETE', async () => {
    const created = await w.http('POST', '/v1/namespaces/debian%3A12/vulnerabilities', {
      body: JSON.stringify({
        Vulnerability: { Name: 'CVE-2024-5535', Severity: 'Low', FixedIn: [{ Name: 'openssl', Version: '3.0.15-1~deb12u1' }] },
      }),
    });
    expect(created.status).toBe(201);
    const name = await w.nextDelivery();
    const [page, ...more] = await readNotification(name);
    expect(more).toHaveLength(0);
    expect('Old' in page).toBe(false);
    expect(page.New.Vulnerability.Name).toBe('CVE-2024-5535');
    // Both openssl versions are affected: 3.0.11 came with the base layer, 3.0.13 with the top one.
    expect(page.New.LayersIntroducingVulnerability).toEqual([ids[0], ids[2]]);
    for (const layerId of page.New.LayersIntroducingVulnerability) expect(layerId.split('.')).toHaveLength(2);
    const tag = await w.http('GET', `/v1/layers/${ids[2]}?vulnerabilities=True`, { headers: QUAY_HEADERS });
    const names = tag.json.Layer.Features.flatMap((f: { Vulnerabilities: Array<{ Name: string }> }) =>
      f.Vulnerabilities.map((v) => v.Name),
    );
    expect(names).toContain(page.New.Vulnerability.Name);
    expect(Math.floor((await w.http('DELETE', `/v1/notifications/${name}`, { headers: QUAY_HEADERS })).status / 100)).toBe(2);
  });

  it('a raised severity: Old and New list the same layer with the same index, ascending', async () => {
    const raised = await w.http('PUT', '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-38545', {
      body: JSON.stringify({ Vulnerability: { Severity: 'Critical' } }),
    });
    expect(raised.status).toBe(200);
    const name = await w.nextDelivery();
    const [page] = await readNotification(name);
    expect(page.Old.Vulnerability.Severity).toBe('High');
    expect(page.New.Vulnerability.Severity).toBe('Critical');
    const indexes = (side: { OrderedLayersIntroducingVulnerability: Array<{ Index: number; LayerName: string }> }) =>
      side.OrderedLayersIntroducingVulnerability.map((l) => [l.LayerName, l.Index] as const);
    expect(indexes(page.Old)).toEqual(indexes(page.New));
    const numbers = indexes(page.New).map(([, index]) => index);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(page.New.LayersIntroducingVulnerability).toEqual([ids[2]]);
    expect(Math.floor((await w.http('DELETE', `/v1/notifications/${name}`, { headers: QUAY_HEADERS })).status / 100)).toBe(2);
  });

  it('garbage-collects a layer: DELETE /v1/layers/<id> answers 2xx', async () => {
    expect(Math.floor((await w.http('DELETE', `/v1/layers/${ids[2]}`, { headers: QUAY_HEADERS })).status / 100)).toBe(2);
    expect((await w.http('GET', `/v1/layers/${ids[2]}?vulnerabilities=True`, { headers: QUAY_HEADERS })).status).toBe(404);
  });
});

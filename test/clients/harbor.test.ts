/**
 * Harbor's Clair integration, both generations:
 *
 * 1. Harbor ≤ 1.9's built-in client (goharbor/harbor v1.8.6):
 *    - src/jobservice/job/impl/scan/clair_job.go prepareLayers: Name = hex sha256 of the chained
 *      digests "sha256:<d1>-sha256:<d2>-…-" (64 characters), Headers {"Authorization": "Bearer
 *      <token>", "Connection": "close"}, ParentName the previous name (absent on the base, all
 *      fields omitempty), Format "Docker", Path "<registry>/v2/<repo>/blobs/<digest>".
 *    - src/common/utils/clair/client.go send: the status must be exactly the expected one
 *      (201 for POST /v1/layers, 200 for GET and DELETE); GetResult sends ?features&vulnerabilities
 *      and reads Layer.Features[].Name, Version, Vulnerabilities[].Name, Severity, FixedBy, Link,
 *      Description (src/jobservice/job/impl/utils/utils.go transformVuln; a missing Layer panics).
 *    - ListNamespaces: GET /v1/namespaces, 200, Namespaces[].Name (null Namespaces panics).
 *    - src/core/service/notifications/clair/handler.go: the webhook {"Notification":{"Name"}},
 *      then GET /v1/notifications/<name>?limit=2 (exactly 200, no "Error"; reads
 *      Old/New.Vulnerability.NamespaceName), then DELETE /v1/notifications/<name> (exactly 200).
 * 2. The pluggable adapter goharbor/harbor-scanner-clair v1.1.1 (Harbor ≥ 1.10):
 *    pkg/scanner/transformer.go ToClairLayers: the same names and body, Headers {"Connection":
 *    "close", "Authorization": <Harbor's registry authorization>}; pkg/clair/client.go: POST must
 *    be 201 and GET ?features&vulnerabilities 200; nothing else is called.
 */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { findingsOf, TOP_LAYER_FINDINGS, world, type World } from './harness.js';

/** Harbor's severity mapping (utils.go ParseClairSev): lower-cased, anything unknown is Unknown. */
const HARBOR_SEVERITY: Record<string, string> = { negligible: 'None', low: 'Low', medium: 'Medium', high: 'High', critical: 'High' };

/** prepareLayers: the chained-digest names, base first. */
function harborNames(w: World): string[] {
  let chain = '';
  return w.image.layers.map((layer) => {
    chain += `${layer.digest}-`;
    return createHash('sha256').update(chain).digest('hex');
  });
}

/** One scan job: the POSTs (each exactly 201) and the GET of the top layer (exactly 200). */
async function scan(w: World, headers: Record<string, string>): Promise<{ statuses: number[]; report: any }> {
  const names = harborNames(w);
  const statuses: number[] = [];
  for (const [i, layer] of w.image.layers.entries()) {
    const body = JSON.stringify({
      Layer: { Name: names[i], Path: w.blobUrl(layer), Headers: headers, ...(i > 0 ? { ParentName: names[i - 1] } : {}), Format: 'Docker' },
    });
    const res = await w.http('POST', '/v1/layers', { headers: { 'content-type': 'application/json' }, body });
    statuses.push(res.status);
    if (res.status !== 201) return { statuses, report: undefined };
  }
  const res = await w.http('GET', `/v1/layers/${names[names.length - 1]}?features&vulnerabilities`);
  statuses.push(res.status);
  return { statuses, report: res.json };
}

describe('Harbor ≤ 1.9 (built-in Clair client)', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
    await w.startNotifier();
  });

  it('scans an image: three POSTs answered exactly 201 (with "Connection: close" among the layer headers), then the report', async () => {
    const { statuses, report } = await scan(w, { Authorization: w.image.authorization, Connection: 'close' });
    expect(statuses).toEqual([201, 201, 201, 200]);
    expect(report.Layer).toBeDefined();
    expect(findingsOf(report.Layer.Features)).toEqual(TOP_LAYER_FINDINGS);
    const severities = report.Layer.Features.flatMap((f: { Vulnerabilities: Array<{ Severity: string }> }) =>
      f.Vulnerabilities.map((v) => HARBOR_SEVERITY[v.Severity.toLowerCase()] ?? 'Unknown'),
    );
    expect(severities.sort()).toEqual(['High', 'High', 'Low']);
    for (const v of report.Layer.Features.flatMap((f: { Vulnerabilities: unknown[] }) => f.Vulnerabilities)) {
      expect(v).toMatchObject({ Name: expect.any(String), Link: expect.any(String), Description: expect.any(String) });
    }
  });

  it('lists namespaces (systeminfo): 200 and a list, never null', async () => {
    const res = await w.http('GET', '/v1/namespaces');
    expect(res.status).toBe(200);
    expect(res.json.Namespaces.map((n: { Name: string }) => n.Name.split(':')[0])).toEqual(['debian']);
  });

  it('handles a notification as its webhook handler does: GET ?limit=2 (200), then DELETE (200)', async () => {
    const changed = await w.http('PUT', '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2024-0727', {
      body: JSON.stringify({ Vulnerability: { Severity: 'High' } }),
    });
    expect(changed.status).toBe(200);
    const name = await w.nextDelivery();
    const res = await w.http('GET', `/v1/notifications/${name}?limit=2`);
    expect(res.status).toBe(200);
    expect(res.json.Error).toBeUndefined();
    expect(res.json.Notification.Old.Vulnerability.NamespaceName).toBe('debian:12');
    expect(res.json.Notification.New.Vulnerability.NamespaceName).toBe('debian:12');
    expect(res.json.Notification.New.Vulnerability.Severity).toBe('High');
    const read = await w.http('DELETE', `/v1/notifications/${name}`);
    expect(read.status).toBe(200);
    // Harbor's rescan after a notification: the same GET of the stored top layer.
    const rescan = await w.http('GET', `/v1/layers/${harborNames(w)[2]}?features&vulnerabilities`);
    expect(rescan.status).toBe(200);
    const openssl = rescan.json.Layer.Features.find((f: { Name: string }) => f.Name === 'openssl');
    expect(openssl.Vulnerabilities[0].Severity).toBe('High');
  });
});

describe('harbor-scanner-clair (Harbor ≥ 1.10 adapter)', () => {
  it('scans with the authorization Harbor hands it: POSTs exactly 201, the GET exactly 200', async () => {
    const w = await world();
    const { statuses, report } = await scan(w, { Connection: 'close', Authorization: w.image.authorization });
    expect(statuses).toEqual([201, 201, 201, 200]);
    expect(findingsOf(report.Layer.Features)).toEqual(TOP_LAYER_FINDINGS);
    // toComponentsOverview ranges over Layer.Features: present even when a layer has no packages.
    const middle = await w.http('GET', `/v1/layers/${harborNames(w)[0]}?features&vulnerabilities`);
    expect(middle.status).toBe(200);
    expect(Array.isArray(middle.json.Layer.Features)).toBe(true);
  });
});

import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { gzip, tarball } from '../../helpers/tarball.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-notifications-'));
  await chmod(dir, 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const status = (pkgs: Array<[string, string]>) =>
  pkgs.map(([name, version]) => `Package: ${name}\nStatus: install ok installed\nVersion: ${version}\n`).join('\n');

/** Layers: each a Debian 12 base with its own version of openssl (and zlib). */
async function indexLayers(t: TestApp, layers: Array<{ name: string; openssl: string; parent?: string }>) {
  for (const l of layers) {
    const path = join(dir, `${l.name}.tar.gz`);
    await writeFile(
      path,
      gzip(
        tarball([
          { path: 'etc/os-release', content: 'ID=debian\nVERSION_ID=12\n' },
          {
            path: 'var/lib/dpkg/status',
            content: status([
              ['openssl', l.openssl],
              ['zlib', '1.2.13-1'],
            ]),
          },
        ]),
      ),
    );
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/layers',
      payload: { Layer: { Name: l.name, Path: path, Format: 'Docker', ParentName: l.parent } },
    });
    expect(res.statusCode).toBe(201);
  }
}

async function latestNotification(t: TestApp): Promise<string> {
  return (await t.pool.query('SELECT name FROM notification ORDER BY id DESC LIMIT 1')).rows[0].name;
}

const vulnUrl = '/v1/namespaces/debian%3A12/vulnerabilities';

describe('GET /v1/notifications/:name', () => {
  it('shows the old and new versions with the layers introducing each, paged together with one token', async () => {
    const t = await testApp({ yaml: '  api:\n    localroots: [' + dir + ']' });
    // Nine layers: openssl 3.0.9 in 1-3, 3.0.11 in 4-6, 3.0.13 in 7-9 (each its own base).
    const layers = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => ({
      name: `layer-${i}`,
      openssl: i <= 3 ? '3.0.9-1' : i <= 6 ? '3.0.11-1' : '3.0.13-1',
    }));
    await indexLayers(t, layers);
    // A child that upgrades nothing introduces nothing: it must not be listed.
    await indexLayers(t, [{ name: 'child-of-1', openssl: '3.0.9-1', parent: 'layer-1' }]);
    await t.app.inject({
      method: 'POST',
      url: vulnUrl,
      payload: { Vulnerability: { Name: 'CVE-1', Severity: 'High', FixedIn: [{ Name: 'openssl', Version: '3.0.11-1' }] } },
    });
    // The fix moves up: Old affects layers 1-3, New affects layers 1-6.
    await t.app.inject({ method: 'PUT', url: `${vulnUrl}/CVE-1/fixes/openssl`, payload: { Feature: { Version: '3.0.13-1' } } });
    const name = await latestNotification(t);

    const oldSeen: string[] = [];
    const newSeen: string[] = [];
    const indexes: number[] = [];
    let url = `/v1/notifications/${name}?limit=2`;
    let pages = 0;
    for (;;) {
      const res = await t.app.inject({ url });
      expect(res.statusCode).toBe(200);
      const n = json(res).Notification;
      pages++;
      expect(n.Name).toBe(name);
      expect(n.Limit).toBe(2);
      expect(n.Created).toMatch(/^\d{10}$/);
      expect(n.Notified).toBeUndefined();
      expect(n.Old.Vulnerability).toMatchObject({
        Name: 'CVE-1',
        NamespaceName: 'debian:12',
        Severity: 'High',
        FixedIn: [{ Name: 'openssl', Version: '3.0.11-1' }],
      });
      expect(n.New.Vulnerability).toMatchObject({ Name: 'CVE-1', FixedIn: [{ Name: 'openssl', Version: '3.0.13-1' }] });
      expect(n.Old.LayersIntroducingVulnerability.length).toBeLessThanOrEqual(2);
      expect(n.Old.LayersIntroducingVulnerability).toEqual(
        n.Old.OrderedLayersIntroducingVulnerability.map((o: { LayerName: string }) => o.LayerName),
      );
      oldSeen.push(...n.Old.LayersIntroducingVulnerability);
      newSeen.push(...n.New.LayersIntroducingVulnerability);
      indexes.push(...n.New.OrderedLayersIntroducingVulnerability.map((o: { Index: number }) => o.Index));
      if (!n.NextPage) break;
      url = `/v1/notifications/${name}?limit=2&page=${encodeURIComponent(n.NextPage)}`;
    }
    expect(pages).toBe(3);
    const a = json(await t.app.inject({ url: `/v1/notifications/${name}?limit=2`, headers: { 'X-Clair-Api-Revision': 'A' } })).Notification;
    expect(a.New.Vulnerability.Namespace).toBe('debian:12');
    expect(a.New.Vulnerability.NamespaceName).toBeUndefined();
    expect(a.New.Vulnerability.FixedIn).toEqual([{ Name: 'openssl', Namespace: 'debian:12', Version: '3.0.13-1' }]);
    expect(oldSeen).toEqual(['layer-1', 'layer-2', 'layer-3']);
    expect(newSeen).toEqual(['layer-1', 'layer-2', 'layer-3', 'layer-4', 'layer-5', 'layer-6']);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b)); // stable, index-ordered
  });

  it('omits Old for a new vulnerability and New for a deleted one, and defaults the limit to 100', async () => {
    const t = await testApp({ yaml: '  api:\n    localroots: [' + dir + ']' });
    await indexLayers(t, [{ name: 'only', openssl: '3.0.9-1' }]);
    await t.app.inject({
      method: 'POST',
      url: vulnUrl,
      payload: { Vulnerability: { Name: 'CVE-2', Severity: 'Low', FixedIn: [{ Name: 'zlib', Version: 'None' }] } },
    });
    const created = json(await t.app.inject({ url: `/v1/notifications/${await latestNotification(t)}` })).Notification;
    expect(created.Old).toBeUndefined();
    expect(created.Limit).toBe(100);
    expect(created.New.LayersIntroducingVulnerability).toEqual(['only']);
    expect(created.NextPage).toBeUndefined();
    await t.app.inject({ method: 'DELETE', url: `${vulnUrl}/CVE-2` });
    const deleted = json(await t.app.inject({ url: `/v1/notifications/${await latestNotification(t)}` })).Notification;
    expect(deleted.New).toBeUndefined();
    expect(deleted.Old.Vulnerability.Name).toBe('CVE-2');
    expect(deleted.Old.LayersIntroducingVulnerability).toEqual(['only']);
  });

  it('DELETE marks it read: Deleted is set, a repeated DELETE is 200, an unknown name is 404', async () => {
    const t = await testApp();
    await t.app.inject({ method: 'POST', url: vulnUrl, payload: { Vulnerability: { Name: 'CVE-3', Severity: 'Low' } } });
    const name = await latestNotification(t);
    const first = await t.app.inject({ method: 'DELETE', url: `/v1/notifications/${name}` });
    expect([first.statusCode, first.body]).toEqual([200, '']);
    const read = json(await t.app.inject({ url: `/v1/notifications/${name}` })).Notification;
    expect(read.Deleted).toMatch(/^\d{10}$/);
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/notifications/${name}` })).statusCode).toBe(200);
    const again = json(await t.app.inject({ url: `/v1/notifications/${name}` })).Notification;
    expect(again.Deleted).toBe(read.Deleted);
    const unknown = await t.app.inject({ method: 'DELETE', url: '/v1/notifications/nope' });
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown)).toEqual({ Error: { Message: 'notification nope does not exist' } });
    expect((await t.app.inject({ url: '/v1/notifications/nope' })).statusCode).toBe(404);
  });

  it('rejects bad limits and tokens with 400', async () => {
    const t = await testApp();
    await t.app.inject({ method: 'POST', url: vulnUrl, payload: { Vulnerability: { Name: 'CVE-4', Severity: 'Low' } } });
    const name = await latestNotification(t);
    for (const limit of ['0', '1001', 'x']) {
      const res = await t.app.inject({ url: `/v1/notifications/${name}?limit=${limit}` });
      expect(res.statusCode).toBe(400);
      expect(json(res).Error.Message).toMatch(/^query parameter limit must be an integer from 1 to 1000 \(got /);
    }
    const wrongKind = await t.app.inject({ url: `/v1/notifications/${name}?page=${encodeURIComponent(t.pageTokens.encode(5))}` });
    expect(wrongKind.statusCode).toBe(400);
    expect(json(wrongKind).Error.Message).toBe('page is not a token of a notification; start again from the first page');
    expect((await t.app.inject({ url: `/v1/notifications/${name}?page=garbage` })).statusCode).toBe(400);
  });
});

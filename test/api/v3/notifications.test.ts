import { beforeAll, describe, expect, it } from 'vitest';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { freshPool } from '../../helpers/db.js';
import { startLayerServer, type LayerServer } from '../../helpers/layer-server.js';
import { gzip, tarball } from '../../helpers/tarball.js';

/** An app (with the ancestry API) on a fresh database. */
async function v3App(): Promise<TestApp> {
  return testApp({ pool: await freshPool() });
}

const AUTH = 'Bearer notifications';
const vulnUrl = '/v1/namespaces/debian%3A12/vulnerabilities';

let server: LayerServer;
beforeAll(async () => {
  server = await startLayerServer();
  const status = (openssl: string) =>
    [
      ['openssl', openssl],
      ['zlib', '1.2.13-1'],
    ]
      .map(([n, v]) => `Package: ${n}\nStatus: install ok installed\nVersion: ${v}\n`)
      .join('\n');
  for (const openssl of ['3.0.9-1', '3.0.11-1', '3.0.13-1']) {
    server.serve(
      `/blobs/base-${openssl}`,
      gzip(
        tarball([
          { path: 'etc/os-release', content: 'ID=debian\nVERSION_ID=12\n' },
          { path: 'var/lib/dpkg/status', content: status(openssl) },
        ]),
      ),
      { authorization: AUTH },
    );
  }
  server.serve('/blobs/app', gzip(tarball([{ path: 'srv/app.js', content: '1' }])), { authorization: AUTH });
});

const layer = (name: string) => ({ hash: `sha256:${name}`, path: server.url(`/blobs/${name}`), headers: { Authorization: AUTH } });

async function ancestry(t: TestApp, name: string, layers: string[]) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/ancestry',
    payload: { ancestry_name: name, format: 'Docker', layers: layers.map(layer) },
  });
  expect(res.statusCode).toBe(200);
}

async function latestNotification(t: TestApp): Promise<string> {
  return (await t.pool.query('SELECT name FROM notification ORDER BY id DESC LIMIT 1')).rows[0].name;
}

type Side = 'old' | 'new';
interface Paged {
  current_page: string;
  next_page?: string;
  limit: number;
  vulnerability: Record<string, unknown>;
  ancestries?: Array<{ index: number; name: string }>;
}

/** Pages one side alone from the first page; every page's ancestries and tokens. */
async function pageSide(t: TestApp, name: string, side: Side, limit: number) {
  const pages: Paged[] = [];
  let token: string | undefined;
  for (;;) {
    const query = `limit=${limit}${token ? `&${side}_vulnerability_page=${encodeURIComponent(token)}` : ''}`;
    const res = await t.app.inject({ url: `/notifications/${name}?${query}` });
    expect(res.statusCode).toBe(200);
    const page = json(res).notification[side] as Paged;
    if (token) expect(page.current_page).toBe(token);
    expect(page.limit).toBe(limit);
    expect((page.ancestries ?? []).length).toBeLessThanOrEqual(limit);
    pages.push(page);
    if (!page.next_page) break;
    expect(page.ancestries).toHaveLength(limit);
    token = page.next_page;
    if (pages.length > 20) throw new Error('paging does not end');
  }
  const ancestries = pages.flatMap((p) => p.ancestries ?? []);
  return { pages, names: ancestries.map((a) => a.name), indexes: ancestries.map((a) => a.index) };
}

const strictlyIncreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);

describe('GET /notifications/{name}', () => {
  let t: TestApp;
  let update: string;
  let ids: Map<string, number>;

  beforeAll(async () => {
    t = await v3App();
    // img-1, img-2: openssl 3.0.9; img-3, img-4: 3.0.11; img-5: 3.0.13; img-6: on img-1's base, inherits 3.0.9.
    await ancestry(t, 'img-1', ['base-3.0.9-1']);
    await ancestry(t, 'img-2', ['base-3.0.9-1', 'app']);
    await ancestry(t, 'img-3', ['base-3.0.11-1']);
    await ancestry(t, 'img-4', ['base-3.0.11-1', 'app']);
    await ancestry(t, 'img-5', ['base-3.0.13-1']);
    await ancestry(t, 'img-6', ['base-3.0.9-1', 'app', 'app']);
    await t.app.inject({
      method: 'POST',
      url: vulnUrl,
      payload: {
        Vulnerability: {
          Name: 'CVE-1',
          Severity: 'High',
          Link: 'https://example.test/CVE-1',
          FixedIn: [{ Name: 'openssl', Version: '3.0.11-1' }],
        },
      },
    });
    // The fix moves up: Old affects the 3.0.9 images, New the 3.0.9 and 3.0.11 ones.
    const put = await t.app.inject({
      method: 'PUT',
      url: `${vulnUrl}/CVE-1/fixes/openssl`,
      payload: { Feature: { Version: '3.0.13-1' } },
    });
    expect(put.statusCode).toBe(200);
    update = await latestNotification(t);
    ids = new Map((await t.pool.query('SELECT id, name FROM ancestry')).rows.map((r) => [r.name, r.id]));
  });

  it('shows both versions; old and new each page on their own, index strictly increasing, union = the affected set', async () => {
    const first = json(await t.app.inject({ url: `/notifications/${update}` })).notification;
    expect(first.name).toBe(update);
    expect(first.created).toMatch(/^\d{10}$/);
    expect(first.notified).toBeUndefined();
    expect(first.deleted).toBeUndefined();
    expect(first.old.limit).toBe(100);
    expect(first.old.next_page).toBeUndefined();
    expect(first.old.vulnerability).toEqual({
      name: 'CVE-1',
      namespace_name: 'debian:12',
      link: 'https://example.test/CVE-1',
      severity: 'High',
    });
    expect(first.new.vulnerability).toEqual(first.old.vulnerability);
    expect(first.old.ancestries).toEqual(['img-1', 'img-2', 'img-6'].map((name) => ({ index: ids.get(name), name })));
    expect(first.new.ancestries).toEqual(['img-1', 'img-2', 'img-3', 'img-4', 'img-6'].map((name) => ({ index: ids.get(name), name })));

    for (const limit of [1, 2]) {
      const oldSide = await pageSide(t, update, 'old', limit);
      const newSide = await pageSide(t, update, 'new', limit);
      expect(oldSide.names).toEqual(['img-1', 'img-2', 'img-6']);
      expect(newSide.names).toEqual(['img-1', 'img-2', 'img-3', 'img-4', 'img-6']);
      expect(oldSide.pages).toHaveLength(Math.ceil(3 / limit));
      expect(newSide.pages).toHaveLength(Math.ceil(5 / limit));
      expect(strictlyIncreasing(oldSide.indexes)).toBe(true);
      expect(strictlyIncreasing(newSide.indexes)).toBe(true);
      expect(new Set(newSide.names).size).toBe(newSide.names.length);
    }
  });

  it('pages the sides independently in one request', async () => {
    const firstPage = json(await t.app.inject({ url: `/notifications/${update}?limit=1` })).notification;
    const secondOld = json(
      await t.app.inject({ url: `/notifications/${update}?limit=1&old_vulnerability_page=${encodeURIComponent(firstPage.old.next_page)}` }),
    ).notification;
    expect(secondOld.old.ancestries).toEqual([{ index: ids.get('img-2'), name: 'img-2' }]);
    expect(secondOld.new.ancestries).toEqual([{ index: ids.get('img-1'), name: 'img-1' }]);
    const thirdOld = json(
      await t.app.inject({ url: `/notifications/${update}?limit=1&old_vulnerability_page=${encodeURIComponent(secondOld.old.next_page)}` }),
    ).notification.old;
    // The new side at its second page, the old at its third (its last), in one request.
    const both = json(
      await t.app.inject({
        url: `/notifications/${update}?limit=1&old_vulnerability_page=${encodeURIComponent(secondOld.old.next_page)}&new_vulnerability_page=${encodeURIComponent(secondOld.new.next_page)}`,
      }),
    ).notification;
    expect(both.old.ancestries).toEqual([{ index: ids.get('img-6'), name: 'img-6' }]);
    expect(both.old.next_page).toBeUndefined();
    expect(thirdOld.ancestries).toEqual(both.old.ancestries);
    expect(both.new.ancestries).toEqual([{ index: ids.get('img-2'), name: 'img-2' }]);
    expect(both.new.next_page).toBeDefined();
    // lowerCamelCase parameter names are accepted too.
    const camel = json(
      await t.app.inject({ url: `/notifications/${update}?limit=1&newVulnerabilityPage=${encodeURIComponent(secondOld.new.next_page)}` }),
    ).notification;
    expect(camel.new.ancestries).toEqual([{ index: ids.get('img-2'), name: 'img-2' }]);
  });

  it('omits old for a new vulnerability and new for a deleted one', async () => {
    await t.app.inject({
      method: 'POST',
      url: vulnUrl,
      payload: {
        Vulnerability: {
          Name: 'CVE-2',
          Severity: 'Low',
          Description: 'zlib',
          Metadata: { NVD: { CVSSv2: { Score: 5 } } },
          FixedIn: [{ Name: 'zlib', Version: 'None' }],
        },
      },
    });
    const created = json(await t.app.inject({ url: `/notifications/${await latestNotification(t)}?limit=1000` })).notification;
    expect(created.old).toBeUndefined();
    expect(created.new.vulnerability).toEqual({
      name: 'CVE-2',
      namespace_name: 'debian:12',
      description: 'zlib',
      severity: 'Low',
      metadata: '{"NVD":{"CVSSv2":{"Score":5}}}',
    });
    expect(created.new.limit).toBe(1000);
    expect(created.new.ancestries.map((a: { name: string }) => a.name)).toEqual(['img-1', 'img-2', 'img-3', 'img-4', 'img-5', 'img-6']);
    expect(created.new.current_page).toEqual(expect.any(String));
    await t.app.inject({ method: 'DELETE', url: `${vulnUrl}/CVE-2` });
    const deleted = json(await t.app.inject({ url: `/notifications/${await latestNotification(t)}` })).notification;
    expect(deleted.new).toBeUndefined();
    expect(deleted.old.vulnerability.name).toBe('CVE-2');
    expect(deleted.old.ancestries).toHaveLength(6);
  });

  it('reflects replaced ancestries: a re-posted image with new content gets a new, higher index; an identical one keeps its own', async () => {
    await ancestry(t, 'img-1', ['base-3.0.13-1']); // no longer affected
    await ancestry(t, 'img-3', ['base-3.0.11-1', 'app']); // new content, still affected: new id
    await ancestry(t, 'img-4', ['base-3.0.11-1', 'app']); // the same content again: untouched
    const n = json(await t.app.inject({ url: `/notifications/${update}` })).notification;
    expect(n.old.ancestries.map((a: { name: string }) => a.name)).toEqual(['img-2', 'img-6']);
    expect(n.new.ancestries.map((a: { name: string }) => a.name)).toEqual(['img-2', 'img-4', 'img-6', 'img-3']);
    expect(n.new.ancestries.find((a: { name: string }) => a.name === 'img-4').index).toBe(ids.get('img-4'));
    expect(strictlyIncreasing(n.new.ancestries.map((a: { index: number }) => a.index))).toBe(true);
  });

  it('rejects bad limits and bad tokens with 400 InvalidArgument', async () => {
    for (const [limit, shown] of [
      ['0', '0'],
      ['1001', '1001'],
      ['x', '"x"'],
      ['-1', '-1'],
      ['1.5', '"1.5"'],
    ]) {
      const res = await t.app.inject({ url: `/notifications/${update}?limit=${limit}` });
      expect(res.statusCode).toBe(400);
      const message = `query parameter limit must be an integer from 1 to 1000 (got ${shown})`;
      expect(json(res)).toEqual({ error: message, code: 3, message });
    }
    const page = json(await t.app.inject({ url: `/notifications/${update}?limit=1` })).notification;
    const token: string = page.old.next_page;
    const tampered = token.slice(0, 40) + (token[40] === 'A' ? 'B' : 'A') + token.slice(41);
    const bad = async (query: string, message: string | RegExp) => {
      const res = await t.app.inject({ url: `/notifications/${update}?${query}` });
      expect(res.statusCode).toBe(400);
      const body = json(res);
      expect(body.code).toBe(3);
      expect(body.error).toBe(body.message);
      if (typeof message === 'string') expect(body.message).toBe(message);
      else expect(body.message).toMatch(message);
    };
    await bad(`old_vulnerability_page=${encodeURIComponent(tampered)}`, /^old_vulnerability_page token is invalid/);
    await bad(
      'new_vulnerability_page=garbage',
      'new_vulnerability_page is not a page token: pass the next_page value of an earlier response unchanged',
    );
    // A token of one side is refused on the other, and on another notification.
    await bad(
      `new_vulnerability_page=${encodeURIComponent(token)}`,
      'new_vulnerability_page is a page token of the old side: pass it as old_vulnerability_page',
    );
    const other = (await t.pool.query('SELECT name FROM notification WHERE name <> $1 LIMIT 1', [update])).rows[0].name;
    const res = await t.app.inject({ url: `/notifications/${other}?old_vulnerability_page=${encodeURIComponent(token)}` });
    expect([res.statusCode, json(res).message]).toEqual([
      400,
      'old_vulnerability_page is a page token of another notification; start again from the first page',
    ]);
    // A token of another list (not {"StartID": n}).
    await bad(
      `old_vulnerability_page=${encodeURIComponent(t.pageTokens.encode({ OldVulnerability: 0, NewVulnerability: 0 }))}`,
      'old_vulnerability_page is not a page token of a notification; start again from the first page',
    );
    // Clair's own shape, {"StartID": n}, is accepted.
    const clair = json(
      await t.app.inject({
        url: `/notifications/${update}?old_vulnerability_page=${encodeURIComponent(t.pageTokens.encode({ StartID: ids.get('img-6') }))}`,
      }),
    ).notification;
    expect(clair.old.ancestries).toEqual([{ index: ids.get('img-6'), name: 'img-6' }]);
  });

  it('answers 404 NotFound for an unknown notification', async () => {
    const res = await t.app.inject({ url: '/notifications/nope' });
    expect(res.statusCode).toBe(404);
    expect(json(res)).toEqual({
      error: "requested notification 'nope' is not found",
      code: 5,
      message: "requested notification 'nope' is not found",
    });
  });
});

describe('DELETE /notifications/{name}', () => {
  it('marks it read with {}, again with {}, and answers 404 for an unknown name', async () => {
    const t = await v3App();
    await t.app.inject({ method: 'POST', url: vulnUrl, payload: { Vulnerability: { Name: 'CVE-3', Severity: 'Low' } } });
    const name = await latestNotification(t);
    const first = await t.app.inject({ method: 'DELETE', url: `/notifications/${name}` });
    expect([first.statusCode, first.body]).toEqual([200, '{}']);
    const read = json(await t.app.inject({ url: `/notifications/${name}` })).notification;
    expect(read.deleted).toMatch(/^\d{10}$/);
    expect(read.old).toBeUndefined();
    expect(read.new).toEqual({
      current_page: expect.any(String),
      limit: 100,
      vulnerability: { name: 'CVE-3', namespace_name: 'debian:12', severity: 'Low' },
    });
    const again = await t.app.inject({ method: 'DELETE', url: `/notifications/${name}` });
    expect([again.statusCode, again.body]).toEqual([200, '{}']);
    expect(json(await t.app.inject({ url: `/notifications/${name}` })).notification.deleted).toBe(read.deleted);
    const unknown = await t.app.inject({ method: 'DELETE', url: '/notifications/nope' });
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown)).toEqual({
      error: "requested notification 'nope' is not found",
      code: 5,
      message: "requested notification 'nope' is not found",
    });
  });
});

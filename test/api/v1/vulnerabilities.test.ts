import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { json, testApp, type TestApp } from '../../helpers/app.js';

const JSON_TYPE = 'application/json;charset=utf-8';

const openssl = {
  Name: 'CVE-2023-5678',
  NamespaceName: 'debian:12',
  Description: 'Generating excessively long X9.42 DH keys is slow',
  Link: 'https://security-tracker.debian.org/tracker/CVE-2023-5678',
  Severity: 'Medium',
  Metadata: { NVD: { CVSSv3: { Score: 5.3, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:L' } } },
  FixedIn: [{ Name: 'openssl', NamespaceName: 'debian:12', VersionFormat: 'dpkg', Version: '3.0.13-1~deb12u1' }],
};

async function post(t: TestApp, body: unknown, ns = 'debian:12', headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url: `/v1/namespaces/${encodeURIComponent(ns)}/vulnerabilities`,
    payload: body as object,
    headers,
  });
}

async function notifications(t: TestApp) {
  const { rows } = await t.pool.query<{ old: string | null; new: string | null }>(`
    SELECT o.name || '@' || o.severity AS old, n.name || '@' || n.severity AS new
    FROM notification x
    LEFT JOIN vulnerability o ON o.id = x.old_vulnerability_id
    LEFT JOIN vulnerability n ON n.id = x.new_vulnerability_id
    ORDER BY x.id`);
  return rows;
}

describe('namespaces', () => {
  it('lists no namespaces on an empty database, as [] in both revisions', async () => {
    const t = await testApp();
    for (const rev of ['A', 'B']) {
      const res = await t.app.inject({ url: '/v1/namespaces', headers: { 'X-Clair-Api-Revision': rev } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_TYPE);
      expect(res.body).toBe('{"Namespaces":[]}');
    }
  });

  it('lists strings in revision A and {Name, VersionFormat} in revision B', async () => {
    const t = await testApp();
    expect((await post(t, { Vulnerability: openssl })).statusCode).toBe(201);
    expect((await post(t, { Vulnerability: { ...openssl, NamespaceName: 'alpine:v3.19', FixedIn: [] } }, 'alpine:v3.19')).statusCode).toBe(
      201,
    );
    const a = await t.app.inject({ url: '/v1/namespaces', headers: { 'x-clair-api-revision': 'a' } });
    expect(json(a)).toEqual({ Namespaces: ['alpine:v3.19', 'debian:12'] });
    const b = await t.app.inject({ url: '/v1/namespaces' });
    expect(json(b)).toEqual({
      Namespaces: [
        { Name: 'alpine:v3.19', VersionFormat: 'apk' },
        { Name: 'debian:12', VersionFormat: 'dpkg' },
      ],
    });
  });

  it('uses the configured default revision when the request names none', async () => {
    const t = await testApp({ yaml: '  api:\n    v1revision: A' });
    await post(t, { Vulnerability: openssl });
    expect(json(await t.app.inject({ url: '/v1/namespaces' }))).toEqual({ Namespaces: ['debian:12'] });
    const vuln = json(await t.app.inject({ url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678' }));
    expect(vuln.Vulnerability.Namespace).toBe('debian:12');
    expect(vuln.Vulnerability.NamespaceName).toBeUndefined();
  });

  it('rejects an unknown revision header', async () => {
    const t = await testApp();
    const res = await t.app.inject({ url: '/v1/namespaces', headers: { 'X-Clair-Api-Revision': 'C' } });
    expect(res.statusCode).toBe(400);
    expect(json(res)).toEqual({ Error: { Message: 'header X-Clair-Api-Revision must be one of A, B, a, b (got "C")' } });
  });
});

describe('POST /v1/namespaces/:ns/vulnerabilities', () => {
  it('creates a vulnerability and answers 201 with what is stored', async () => {
    const t = await testApp();
    const res = await post(t, { Vulnerability: openssl });
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toBe(JSON_TYPE);
    expect(json(res)).toEqual({ Vulnerability: openssl });
  });

  it('writes revision A shapes when asked', async () => {
    const t = await testApp();
    const res = await post(t, { Vulnerability: openssl }, 'debian:12', { 'X-Clair-Api-Revision': 'A' });
    const v = json(res).Vulnerability;
    expect(v.Namespace).toBe('debian:12');
    expect(v.NamespaceName).toBeUndefined();
    expect(v.FixedIn).toEqual([{ Name: 'openssl', Namespace: 'debian:12', Version: '3.0.13-1~deb12u1' }]);
  });

  it('accepts revision A input (Namespace), lower-case field names and any content type', async () => {
    const t = await testApp();
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/debian%3A12/vulnerabilities',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: JSON.stringify({
        vulnerability: { name: 'CVE-1', namespace: 'debian:12', severity: 'critical', fixedin: [{ name: 'zlib', version: '1:1.2.13' }] },
      }),
    });
    expect(res.statusCode).toBe(201);
    expect(json(res).Vulnerability).toEqual({
      Name: 'CVE-1',
      NamespaceName: 'debian:12',
      Severity: 'Critical',
      FixedIn: [{ Name: 'zlib', NamespaceName: 'debian:12', VersionFormat: 'dpkg', Version: '1:1.2.13' }],
    });
  });

  it('stores "None" as no fix and shows it back as None', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: { ...openssl, FixedIn: [{ Name: 'openssl', Version: 'None' }] } });
    const { rows } = await t.pool.query('SELECT fixed_version FROM vulnerability_fixedin');
    expect(rows).toEqual([{ fixed_version: null }]);
    const got = json(await t.app.inject({ url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678?fixedIn' }));
    expect(got.Vulnerability.FixedIn).toEqual([{ Name: 'openssl', NamespaceName: 'debian:12', VersionFormat: 'dpkg', Version: 'None' }]);
  });

  it('merges into an existing vulnerability as Clair did: fixes added or replaced, others kept', async () => {
    const t = await testApp();
    await post(t, {
      Vulnerability: {
        ...openssl,
        FixedIn: [
          { Name: 'openssl', Version: '3.0.11-1' },
          { Name: 'libssl', Version: '1.0' },
        ],
      },
    });
    const res = await post(t, {
      Vulnerability: {
        ...openssl,
        Severity: 'High',
        FixedIn: [
          { Name: 'openssl', Version: '3.0.13-1' },
          { Name: 'nss', Version: 'None' },
        ],
      },
    });
    expect(res.statusCode).toBe(201);
    const fixes = json(res)
      .Vulnerability.FixedIn.map((f: { Name: string; Version: string }) => `${f.Name}=${f.Version}`)
      .sort();
    expect(fixes).toEqual(['libssl=1.0', 'nss=None', 'openssl=3.0.13-1']);
    expect(json(res).Vulnerability.Severity).toBe('High');
  });

  it("uses a known distribution's format and the client's format only for unknown namespaces", async () => {
    const t = await testApp();
    await post(
      t,
      {
        Vulnerability: {
          ...openssl,
          NamespaceName: 'rhel:9',
          FixedIn: [{ Name: 'openssl', VersionFormat: 'dpkg', Version: '1:3.0.7-25.el9_3' }],
        },
      },
      'rhel:9',
    );
    await post(
      t,
      { Vulnerability: { Name: 'X-1', Severity: 'Low', FixedIn: [{ Name: 'pkg', VersionFormat: 'apk', Version: '1.2.3-r0' }] } },
      'acme:1',
    );
    const b = json(await t.app.inject({ url: '/v1/namespaces' }));
    expect(b.Namespaces).toEqual([
      { Name: 'acme:1', VersionFormat: 'apk' },
      { Name: 'rhel:9', VersionFormat: 'rpm' },
    ]);
  });

  const badBodies: Array<[string, unknown, RegExp]> = [
    ['no Vulnerability key', { Vuln: {} }, /^Vulnerability is required$/],
    ['a name of the wrong type', { Vulnerability: { Name: 42 } }, /^Vulnerability\.Name must be a string \(got 42\)$/],
    ['no name', { Vulnerability: { Severity: 'Low' } }, /^Vulnerability\.Name is required$/],
    [
      'an unknown severity',
      { Vulnerability: { Name: 'CVE-1', Severity: 'Severe' } },
      /^Severity "Severe" is not one of Unknown, Negligible, Low, Medium, High, Critical, Defcon1$/,
    ],
    [
      "a namespace that is not the URL's",
      { Vulnerability: { Name: 'CVE-1', NamespaceName: 'debian:11' } },
      /is in namespace debian:11, but the URL names namespace debian:12/,
    ],
    [
      'a fix without a version',
      { Vulnerability: { Name: 'CVE-1', FixedIn: [{ Name: 'zlib' }] } },
      /^FixedIn\[0\]\.Version is required \("None" when no fix exists\)$/,
    ],
    ['a fix without a name', { Vulnerability: { Name: 'CVE-1', FixedIn: [{ Version: '1.0' }] } }, /^FixedIn\[0\]\.Name is required/],
    [
      'an invalid dpkg version',
      { Vulnerability: { Name: 'CVE-1', FixedIn: [{ Name: 'zlib', Version: '1.0 beta' }] } },
      /is not a valid dpkg version/,
    ],
    [
      'a fix in another namespace',
      { Vulnerability: { Name: 'CVE-1', FixedIn: [{ Name: 'zlib', NamespaceName: 'debian:11', Version: '1' }] } },
      /FixedIn\[0\] is in namespace debian:11/,
    ],
    [
      'the same feature twice',
      {
        Vulnerability: {
          Name: 'CVE-1',
          FixedIn: [
            { Name: 'zlib', Version: '1' },
            { Name: 'zlib', Version: '2' },
          ],
        },
      },
      /FixedIn lists zlib more than once/,
    ],
    [
      'an unsupported version format',
      { Vulnerability: { Name: 'CVE-1', FixedIn: [{ Name: 'zlib', VersionFormat: 'alpm', Version: '1' }] } },
      /VersionFormat "alpm" is not supported/,
    ],
  ];
  for (const [what, body, message] of badBodies) {
    it(`answers 400 to ${what} and stores nothing`, async () => {
      const t = await testApp();
      const res = await post(t, body);
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toBe(JSON_TYPE);
      expect(Object.keys(json(res))).toEqual(['Error']);
      expect(json(res).Error.Message).toMatch(message);
      const { rows } = await t.pool.query('SELECT (SELECT count(*) FROM vulnerability) AS v, (SELECT count(*) FROM notification) AS n');
      expect(rows[0]).toEqual({ v: 0, n: 0 });
    });
  }

  it('answers 400 to a namespace Tarsier does not know when no VersionFormat is given', async () => {
    const t = await testApp();
    const res = await post(t, { Vulnerability: { Name: 'X-1', Severity: 'Low', FixedIn: [{ Name: 'pkg', Version: '1.0' }] } }, 'acme:1');
    expect(res.statusCode).toBe(400);
    expect(json(res).Error.Message).toBe(
      'namespace acme:1 is not a distribution Tarsier knows, so its version format is unknown: create it with a POST whose FixedIn entries give VersionFormat (dpkg, rpm, apk, semver, pep440, go, maven, gem, nuget or composer)',
    );
    expect(json(await t.app.inject({ url: '/v1/namespaces' })).Namespaces).toEqual([]);
  });

  it('answers 400 to malformed JSON, an empty body and a non-object body', async () => {
    const t = await testApp();
    const url = '/v1/namespaces/debian%3A12/vulnerabilities';
    const broken = await t.app.inject({
      method: 'POST',
      url,
      payload: '{"Vulnerability": {',
      headers: { 'content-type': 'application/json' },
    });
    expect(broken.statusCode).toBe(400);
    expect(json(broken).Error.Message).toMatch(/^request body is not valid JSON: /);
    const empty = await t.app.inject({ method: 'POST', url });
    expect(empty.statusCode).toBe(400);
    expect(json(empty).Error.Message).toBe('request body is empty: send a JSON object');
    const list = await t.app.inject({ method: 'POST', url, payload: '[1,2]', headers: { 'content-type': 'application/json' } });
    expect(list.statusCode).toBe(400);
  });

  it('refuses a body over 1 MiB and keeps serving', async () => {
    const t = await testApp();
    const huge = JSON.stringify({ Vulnerability: { Name: 'CVE-1', Description: 'x'.repeat(1024 * 1024) } });
    const res = await post(t, huge);
    expect(res.statusCode).toBe(413);
    expect(json(res)).toEqual({ Error: { Message: 'request body is larger than the 1 MiB limit' } });
    expect((await post(t, { Vulnerability: openssl })).statusCode).toBe(201);
  });

  it('answers 400 to a value the database cannot store (a NUL character, an over-long name), storing nothing', async () => {
    const t = await testApp();
    const nul = await post(t, { Vulnerability: { ...openssl, Name: 'CVE-2023-\u00005678' } });
    expect(nul.statusCode).toBe(400);
    expect(json(nul)).toEqual({
      Error: { Message: 'a value contains a NUL character or invalid UTF-8, which cannot be stored; remove it' },
    });
    // Names are limited before they reach the database's index (whose row size limit is lower).
    const long = await post(t, { Vulnerability: { ...openssl, Name: `CVE-${randomBytes(9000).toString('base64')}` } });
    expect(long.statusCode).toBe(400);
    expect(json(long).Error.Message).toMatch(/^Vulnerability\.Name must be at most 1024 characters long \(got "CVE-/);
    for (const url of ['/v1/layers/a%00b', '/v1/notifications/a%00b']) {
      const res = await t.app.inject({ url });
      expect(res.statusCode, url).toBe(400);
    }
    expect((await t.pool.query('SELECT count(*)::int AS n FROM vulnerability')).rows[0].n).toBe(0);
    expect((await post(t, { Vulnerability: openssl })).statusCode).toBe(201);
  });
});

describe('GET, PUT and DELETE /v1/namespaces/:ns/vulnerabilities/:name', () => {
  it('returns FixedIn only with ?fixedIn (a presence flag that =false turns off)', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    const base = '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678';
    const { FixedIn, ...withoutFixes } = openssl;
    expect(json(await t.app.inject({ url: base }))).toEqual({ Vulnerability: withoutFixes });
    expect(json(await t.app.inject({ url: `${base}?fixedIn` }))).toEqual({ Vulnerability: { ...withoutFixes, FixedIn } });
    expect(json(await t.app.inject({ url: `${base}?fixedIn=false` }))).toEqual({ Vulnerability: withoutFixes });
    expect(json(await t.app.inject({ url: `${base}?fixedIn=0` }))).toEqual({ Vulnerability: withoutFixes });
  });

  it('answers 404 for an unknown namespace or vulnerability', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    const noNs = await t.app.inject({ url: '/v1/namespaces/debian%3A99/vulnerabilities/CVE-2023-5678' });
    expect(noNs.statusCode).toBe(404);
    expect(json(noNs)).toEqual({ Error: { Message: 'namespace debian:99 does not exist' } });
    const noVuln = await t.app.inject({ url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-0' });
    expect(noVuln.statusCode).toBe(404);
    expect(json(noVuln)).toEqual({ Error: { Message: 'vulnerability CVE-0 does not exist in namespace debian:12' } });
  });

  it('PUT replaces the description, link, severity and metadata and keeps the fixes', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    const res = await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678',
      payload: { Vulnerability: { Description: 'updated', Severity: 'low' } },
    });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({
      Vulnerability: {
        Name: 'CVE-2023-5678',
        NamespaceName: 'debian:12',
        Description: 'updated',
        Severity: 'Low',
        FixedIn: openssl.FixedIn,
      },
    });
  });

  it('PUT creates a vulnerability that does not exist yet', async () => {
    const t = await testApp();
    const res = await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-9',
      payload: { Vulnerability: { Severity: 'High' } },
    });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ Vulnerability: { Name: 'CVE-9', NamespaceName: 'debian:12', Severity: 'High', FixedIn: [] } });
  });

  it('PUT rejects a non-empty FixedIn and a name that differs from the URL', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    const url = '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678';
    const withFixes = await t.app.inject({ method: 'PUT', url, payload: { Vulnerability: openssl } });
    expect(withFixes.statusCode).toBe(400);
    expect(json(withFixes).Error.Message).toBe(
      'Vulnerability.FixedIn must be empty in a PUT: manage fixes through .../fixes/{featureName}',
    );
    const otherName = await t.app.inject({ method: 'PUT', url, payload: { Vulnerability: { Name: 'CVE-1', Severity: 'Low' } } });
    expect(otherName.statusCode).toBe(400);
    expect(json(otherName).Error.Message).toBe('the body names vulnerability CVE-1, but the URL names CVE-2023-5678');
  });

  it('DELETE answers 200 with an empty body, then 404', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    const url = '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678';
    const res = await t.app.inject({ method: 'DELETE', url });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
    expect(res.headers['content-type']).toBeUndefined();
    expect((await t.app.inject({ url })).statusCode).toBe(404);
    const again = await t.app.inject({ method: 'DELETE', url });
    expect(again.statusCode).toBe(404);
    expect(json(again).Error.Message).toBe('vulnerability CVE-2023-5678 does not exist in namespace debian:12');
  });
});

describe('fixes', () => {
  const base = '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678/fixes';

  it('lists, adds, replaces and deletes fixes', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    expect(json(await t.app.inject({ url: base }))).toEqual({ Features: openssl.FixedIn });

    const put = await t.app.inject({
      method: 'PUT',
      url: `${base}/libssl3`,
      payload: { Feature: { Name: 'libssl3', Version: '3.0.13-1' } },
    });
    expect(put.statusCode).toBe(200);
    expect(json(put)).toEqual({ Feature: { Name: 'libssl3', NamespaceName: 'debian:12', VersionFormat: 'dpkg', Version: '3.0.13-1' } });

    const replace = await t.app.inject({ method: 'PUT', url: `${base}/openssl`, payload: { Feature: { Version: 'None' } } });
    expect(replace.statusCode).toBe(200);
    const listed = json(await t.app.inject({ url: base, headers: { 'X-Clair-Api-Revision': 'A' } }));
    expect(listed).toEqual({
      Features: [
        { Name: 'libssl3', Namespace: 'debian:12', Version: '3.0.13-1' },
        { Name: 'openssl', Namespace: 'debian:12', Version: 'None' },
      ],
    });

    const del = await t.app.inject({ method: 'DELETE', url: `${base}/openssl` });
    expect(del.statusCode).toBe(200);
    expect(del.body).toBe('');
    expect(json(await t.app.inject({ url: base })).Features.map((f: { Name: string }) => f.Name)).toEqual(['libssl3']);
  });

  it('answers 400 to a mismatched name or an invalid version, 404 to an unknown fix or vulnerability', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    const mismatch = await t.app.inject({ method: 'PUT', url: `${base}/openssl`, payload: { Feature: { Name: 'zlib', Version: '1' } } });
    expect(mismatch.statusCode).toBe(400);
    expect(json(mismatch).Error.Message).toBe('the body names feature zlib, but the URL names openssl');
    const invalid = await t.app.inject({ method: 'PUT', url: `${base}/openssl`, payload: { Feature: { Version: '' } } });
    expect(invalid.statusCode).toBe(400);
    expect(json(invalid).Error.Message).toBe('Feature.Version is required ("None" when no fix exists)');
    const noFix = await t.app.inject({ method: 'DELETE', url: `${base}/zlib` });
    expect(noFix.statusCode).toBe(404);
    expect(json(noFix).Error.Message).toBe('vulnerability CVE-2023-5678 has no fix for zlib');
    const noVuln = await t.app.inject({
      method: 'PUT',
      url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-0/fixes/zlib',
      payload: { Feature: { Version: '1' } },
    });
    expect(noVuln.statusCode).toBe(404);
    expect((await t.app.inject({ url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-0/fixes' })).statusCode).toBe(404);
  });
});

describe('notifications for API changes', () => {
  it('writes one notification per change, none for a write that changes nothing', async () => {
    const t = await testApp();
    const url = '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678';
    await post(t, { Vulnerability: openssl }); // create
    await post(t, { Vulnerability: openssl }); // same content: no change
    await t.app.inject({ method: 'PUT', url, payload: { Vulnerability: { ...openssl, FixedIn: [], Severity: 'High' } } });
    await t.app.inject({ method: 'PUT', url: `${url}/fixes/libssl3`, payload: { Feature: { Version: '3.0.13-1' } } });
    await t.app.inject({ method: 'DELETE', url: `${url}/fixes/libssl3` });
    await t.app.inject({ method: 'DELETE', url });
    expect(await notifications(t)).toEqual([
      { old: null, new: 'CVE-2023-5678@Medium' },
      { old: 'CVE-2023-5678@Medium', new: 'CVE-2023-5678@High' },
      { old: 'CVE-2023-5678@High', new: 'CVE-2023-5678@High' },
      { old: 'CVE-2023-5678@High', new: 'CVE-2023-5678@High' },
      { old: 'CVE-2023-5678@High', new: null },
    ]);
  });

  it('keeps every superseded version readable and exactly one live version', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    await post(t, { Vulnerability: { ...openssl, Severity: 'High' } });
    const { rows } = await t.pool.query('SELECT severity, deleted_at IS NULL AS live FROM vulnerability ORDER BY id');
    expect(rows).toEqual([
      { severity: 'Medium', live: false },
      { severity: 'High', live: true },
    ]);
    const fixes = await t.pool.query('SELECT vulnerability_id FROM vulnerability_fixedin ORDER BY id');
    expect(fixes.rowCount).toBe(2); // each version keeps its own fixed-in entries
  });

  it('rolls a failed write back whole: no notification without its change', async () => {
    const t = await testApp();
    await post(t, { Vulnerability: openssl });
    const bad = await post(t, { Vulnerability: { ...openssl, Severity: 'High', FixedIn: [{ Name: 'openssl', Version: 'not valid!' }] } });
    expect(bad.statusCode).toBe(400);
    expect(await notifications(t)).toEqual([{ old: null, new: 'CVE-2023-5678@Medium' }]);
    const live = json(await t.app.inject({ url: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-2023-5678' }));
    expect(live.Vulnerability.Severity).toBe('Medium');
  });

  it('serialises concurrent writers of one vulnerability: one live row, one notification each', async () => {
    const t = await testApp();
    const severities = ['Low', 'Medium', 'High', 'Critical', 'Negligible', 'Unknown', 'Defcon1', 'Low'];
    const results = await Promise.all(severities.map((s) => post(t, { Vulnerability: { ...openssl, Severity: s } })));
    expect(results.map((r) => r.statusCode)).toEqual(severities.map(() => 201));
    const { rows } = await t.pool.query('SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS live FROM vulnerability');
    expect(rows[0].live).toBe(1);
    const n = await notifications(t);
    // Every notification's old side is the previous notification's new side: a chain, no gaps.
    for (let i = 1; i < n.length; i++) expect(n[i]!.old).toBe(n[i - 1]!.new);
  });
});

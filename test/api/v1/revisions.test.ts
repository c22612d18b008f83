import { describe, expect, it } from 'vitest';
import { json, testApp } from '../../helpers/app.js';

/**
 * Every v1 route of the vulnerability database, in both revisions: revision A writes `Namespace`
 * (and namespace lists of strings), revision B writes `NamespaceName` (and {Name, VersionFormat}).
 */
const base = '/v1/namespaces/ubuntu%3A22.04/vulnerabilities';
const vulnerability = {
  Name: 'CVE-2024-2511',
  Severity: 'Low',
  FixedIn: [{ Name: 'openssl', Version: '3.0.2-0ubuntu1.15' }],
};

const routes: Array<{ name: string; method: 'GET' | 'POST' | 'PUT'; url: string; payload?: object; pick: (body: any) => any }> = [
  {
    name: 'POST vulnerability',
    method: 'POST',
    url: base,
    payload: { Vulnerability: { ...vulnerability, Name: 'CVE-NEW' } },
    pick: (b) => [b.Vulnerability, b.Vulnerability.FixedIn[0]],
  },
  { name: 'GET vulnerability list', method: 'GET', url: `${base}?limit=5`, pick: (b) => b.Vulnerabilities },
  {
    name: 'GET vulnerability',
    method: 'GET',
    url: `${base}/CVE-2024-2511?fixedIn`,
    pick: (b) => [b.Vulnerability, b.Vulnerability.FixedIn[0]],
  },
  {
    name: 'PUT vulnerability',
    method: 'PUT',
    url: `${base}/CVE-2024-2511`,
    payload: { Vulnerability: { Severity: 'Medium' } },
    pick: (b) => [b.Vulnerability, b.Vulnerability.FixedIn[0]],
  },
  { name: 'GET fixes', method: 'GET', url: `${base}/CVE-2024-2511/fixes`, pick: (b) => b.Features },
  {
    name: 'PUT fix',
    method: 'PUT',
    url: `${base}/CVE-2024-2511/fixes/libssl3`,
    payload: { Feature: { Version: '3.0.2-0ubuntu1.15' } },
    pick: (b) => [b.Feature],
  },
];

describe.each(['A', 'B'] as const)('revision %s', (revision) => {
  const key = revision === 'A' ? 'Namespace' : 'NamespaceName';
  const other = revision === 'A' ? 'NamespaceName' : 'Namespace';

  it.each(routes)("$name writes the revision's namespace field", async (route) => {
    const t = await testApp();
    const seed = await t.app.inject({ method: 'POST', url: base, payload: { Vulnerability: vulnerability } });
    expect(seed.statusCode).toBe(201);
    const res = await t.app.inject({
      method: route.method,
      url: route.url,
      headers: { 'X-Clair-Api-Revision': revision },
      ...(route.payload ? { payload: route.payload } : {}),
    });
    expect(res.statusCode).toBe(route.method === 'POST' ? 201 : 200);
    const objects = route.pick(json(res)) as Array<Record<string, unknown>>;
    expect(objects.length).toBeGreaterThan(0);
    for (const o of objects) {
      expect(o[key]).toBe('ubuntu:22.04');
      expect(o[other]).toBeUndefined();
      // Revision A features carry no VersionFormat; revision B ones do.
      if ('Version' in o) expect(o.VersionFormat).toBe(revision === 'B' ? 'dpkg' : undefined);
    }
  });

  it("GET namespaces writes the revision's list shape", async () => {
    const t = await testApp();
    await t.app.inject({ method: 'POST', url: base, payload: { Vulnerability: vulnerability } });
    const res = await t.app.inject({ url: '/v1/namespaces', headers: { 'X-Clair-Api-Revision': revision } });
    expect(json(res).Namespaces).toEqual(revision === 'A' ? ['ubuntu:22.04'] : [{ Name: 'ubuntu:22.04', VersionFormat: 'dpkg' }]);
  });

  it('DELETE routes answer 200 with an empty body', async () => {
    const t = await testApp();
    await t.app.inject({ method: 'POST', url: base, payload: { Vulnerability: vulnerability } });
    for (const url of [`${base}/CVE-2024-2511/fixes/openssl`, `${base}/CVE-2024-2511`]) {
      const res = await t.app.inject({ method: 'DELETE', url, headers: { 'X-Clair-Api-Revision': revision } });
      expect([res.statusCode, res.body]).toEqual([200, '']);
    }
  });
});

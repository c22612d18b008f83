/**
 * A request answered 4xx has changed nothing: every write route is checked with the whole store
 * compared before and after (every table's rows and the data generation), over a store that holds
 * layers, an ancestry, vulnerabilities and notifications. Each refused request is also sent in a
 * valid form where that would write, to show the refusal is what kept the store unchanged.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { debian12, dpkgStatus } from '../helpers/dpkg-status.js';
import { startLayerServer, type LayerServer } from '../helpers/layer-server.js';
import { storeSnapshot } from '../helpers/store-snapshot.js';
import { gzip, tarball } from '../helpers/tarball.js';

interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  body?: string | object;
  headers?: Record<string, string>;
}

const NS = '/v1/namespaces/debian%3A12';
const vulnerability = { Name: 'CVE-2024-9999', Severity: 'High', Description: 'd', FixedIn: [{ Name: 'bash', Version: '5.2.15-3' }] };

/** 10,000 nested lists: the shape that made the store's JSON functions give up (a 500). */
const deepMetadata = `{"Vulnerability":{"Name":"CVE-2024-9999","Metadata":{"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`;
/** One level past the documented limit of 32. */
const nestedPastLimit = `{"Vulnerability":{"Name":"CVE-2024-9999","Metadata":${'{"a":'.repeat(31)}1${'}'.repeat(31)}}}`;

describe('a 4xx changes nothing', () => {
  let t: TestApp;
  let registry: LayerServer;
  let notification: string;

  const send = (call: Call) =>
    t.app.inject({
      method: call.method,
      url: call.url,
      headers: { 'content-type': 'application/json', ...call.headers },
      ...(call.body === undefined ? {} : { payload: typeof call.body === 'string' ? call.body : JSON.stringify(call.body) }),
    });

  beforeAll(async () => {
    t = await testApp({ yaml: '  api:\n    bodytimeout: 5s' });
    registry = await startLayerServer();
    registry.serve(
      '/base.tar.gz',
      gzip(
        tarball([
          { path: 'etc/os-release', content: debian12 },
          { path: 'var/lib/dpkg/status', content: dpkgStatus({ name: 'bash', version: '5.2.15-2+b2' }) },
        ]),
      ),
    );
    registry.serve('/not-a-layer', Buffer.from('<html>sign in</html>'));
    const seed: Call[] = [
      {
        method: 'POST',
        url: `${NS}/vulnerabilities`,
        body: { Vulnerability: { Name: 'CVE-2024-0001', Severity: 'Low', FixedIn: [{ Name: 'bash', Version: '5.2.15-3' }] } },
      },
      { method: 'POST', url: '/v1/layers', body: { Layer: { Name: 'base', Path: registry.url('/base.tar.gz'), Format: 'Docker' } } },
      {
        method: 'POST',
        url: '/ancestry',
        body: { ancestry_name: 'team/app', format: 'Docker', layers: [{ hash: 'sha256:base', path: registry.url('/base.tar.gz') }] },
      },
      { method: 'PUT', url: `${NS}/vulnerabilities/CVE-2024-0001`, body: { Vulnerability: { Severity: 'High' } } },
    ];
    for (const call of seed) expect((await send(call)).statusCode, call.url).toBeLessThan(300);
    notification = (await t.pool.query('SELECT name FROM notification ORDER BY id DESC LIMIT 1')).rows[0].name;
  });

  /** The refused call must answer 4xx in its route's envelope and leave the store exactly as it was. */
  async function refuses(call: Call, status: number): Promise<void> {
    const before = await storeSnapshot(t.pool);
    const res = await send(call);
    expect(res.statusCode, `${call.method} ${call.url.slice(0, 80)}: ${res.body.slice(0, 300)}`).toBe(status);
    const body = json(res);
    if (call.url.startsWith('/v1/')) {
      expect(Object.keys(body)).toEqual(['Error']);
    } else {
      expect(Object.keys(body).sort()).toEqual(['code', 'error', 'message']);
    }
    expect(await storeSnapshot(t.pool), `${call.method} ${call.url.slice(0, 80)}`).toEqual(before);
  }

  /** The same call, valid, does write: the refusal is what kept the store unchanged. */
  async function writes(call: Call): Promise<void> {
    const before = await storeSnapshot(t.pool);
    const res = await send(call);
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(await storeSnapshot(t.pool)).not.toEqual(before);
  }

  const writeRoutes = (): Call[] => [
    {
      method: 'POST',
      url: '/v1/layers',
      body: { Layer: { Name: 'child', ParentName: 'base', Path: registry.url('/base.tar.gz'), Format: 'Docker' } },
    },
    { method: 'POST', url: `${NS}/vulnerabilities`, body: { Vulnerability: vulnerability } },
    {
      method: 'PUT',
      url: `${NS}/vulnerabilities/CVE-2024-0001`,
      body: { Vulnerability: { Severity: 'Critical', Description: 'changed' } },
    },
    { method: 'PUT', url: `${NS}/vulnerabilities/CVE-2024-0001/fixes/bash`, body: { Feature: { Name: 'bash', Version: '5.2.15-4' } } },
    { method: 'DELETE', url: `${NS}/vulnerabilities/CVE-2024-0001/fixes/bash` },
    { method: 'DELETE', url: `${NS}/vulnerabilities/CVE-2024-0001` },
    { method: 'DELETE', url: `/v1/notifications/${notification}` },
    { method: 'DELETE', url: '/v1/layers/base' },
  ];

  it('v1 writes refuse bad bodies, names, values and queries, storing nothing', async () => {
    const cases: Array<[Call, number]> = [
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: '{"Vulnerability": {' }, 400],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: '[1,2]' }, 400],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: { Vulnerability: 'CVE-1' } }, 400],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: deepMetadata }, 400],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: nestedPastLimit }, 400],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: '{"Vulnerability":{"Name":"CVE-2024-9999","Description":"\\ud800"}}' }, 400],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: '{"Vulnerability":{"Name":"CVE-2024-9999","Metadata":{"\\udfff":1}}}' }, 400],
      [
        { method: 'POST', url: `${NS}/vulnerabilities`, body: '{"Vulnerability":{"Name":"CVE-2024-9999","Metadata":{"x":["\\udbff"]}}}' },
        400,
      ],
      [
        { method: 'POST', url: `${NS}/vulnerabilities`, body: { Vulnerability: { ...vulnerability, Description: 'nul \u0000 inside' } } },
        400,
      ],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: { Vulnerability: { ...vulnerability, Name: 'N'.repeat(2000) } } }, 400],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: { Vulnerability: { ...vulnerability, Severity: 'Severe' } } }, 400],
      [
        {
          method: 'POST',
          url: `${NS}/vulnerabilities`,
          body: { Vulnerability: { ...vulnerability, FixedIn: [{ Name: 'bash', Version: '1 0' }] } },
        },
        400,
      ],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: { Vulnerability: { ...vulnerability, FixedIn: 'bash' } } }, 400],
      [
        {
          method: 'POST',
          url: '/v1/namespaces/debian%3A11/vulnerabilities',
          body: { Vulnerability: { ...vulnerability, NamespaceName: 'debian:12' } },
        },
        400,
      ],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: 'x'.repeat((1 << 20) + 1) }, 413],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: '{}', headers: { 'content-encoding': 'gzip' } }, 415],
      [{ method: 'POST', url: `${NS}/vulnerabilities`, body: '{}', headers: { 'content-type': 'application/' } }, 415],
      [
        {
          method: 'PUT',
          url: `${NS}/vulnerabilities/CVE-2024-0001`,
          body: { Vulnerability: { FixedIn: [{ Name: 'bash', Version: '1' }] } },
        },
        400,
      ],
      [{ method: 'PUT', url: `${NS}/vulnerabilities/CVE-2024-0001`, body: { Vulnerability: { Name: 'CVE-1' } } }, 400],
      [{ method: 'PUT', url: `${NS}/vulnerabilities/CVE-2024-0001`, body: '{"Vulnerability":{"Link":"\\ud83d"}}' }, 400],
      [{ method: 'PUT', url: `${NS}/vulnerabilities/CVE-2024-0001/fixes/bash`, body: { Feature: { Name: 'zsh', Version: '1' } } }, 400],
      [{ method: 'PUT', url: `${NS}/vulnerabilities/CVE-2024-0001/fixes/bash`, body: { Feature: { Version: 'not a version' } } }, 400],
      [{ method: 'PUT', url: `${NS}/vulnerabilities/CVE-2024-0001/fixes/bash`, body: {} }, 400],
      [{ method: 'DELETE', url: `${NS}/vulnerabilities/CVE-2024-0001/fixes/zsh` }, 404],
      [{ method: 'DELETE', url: `${NS}/vulnerabilities/CVE-0000-0000` }, 404],
      [{ method: 'DELETE', url: `${NS}/vulnerabilities/CVE%zz` }, 400],
      [{ method: 'DELETE', url: '/v1/notifications/unknown' }, 404],
      [{ method: 'DELETE', url: '/v1/notifications/a%00b' }, 400],
      [{ method: 'DELETE', url: `/v1/layers/${'l'.repeat(2000)}` }, 400],
      [{ method: 'DELETE', url: '/v1/layers/unknown' }, 404],
      [
        {
          method: 'POST',
          url: '/v1/layers',
          body: { Layer: { Name: 'x', Path: registry.url('/base.tar.gz'), Format: 'Docker', ParentName: 'unknown' } },
        },
        400,
      ],
      [{ method: 'POST', url: '/v1/layers', body: { Layer: { Name: 'x', Path: registry.url('/not-a-layer'), Format: 'Docker' } } }, 422],
      [{ method: 'POST', url: '/v1/layers', body: { Layer: { Name: 'x', Path: registry.url('/missing'), Format: 'Docker' } } }, 400],
      [{ method: 'POST', url: '/v1/layers', body: { Layer: { Name: 'x', Path: 'ftp://example/layer', Format: 'Docker' } } }, 400],
      [{ method: 'POST', url: '/v1/layers', body: { Layer: { Name: 'x', Path: '/etc/passwd', Format: 'Docker' } } }, 400],
      [{ method: 'POST', url: '/v1/layers', body: { Layer: { Name: 'x', Path: registry.url('/base.tar.gz'), Format: 'tar' } } }, 400],
      [
        {
          method: 'POST',
          url: '/v1/layers',
          body: { Layer: { Name: 'x', Path: registry.url('/base.tar.gz'), Format: 'Docker', Headers: { Authorization: 7 } } },
        },
        400,
      ],
      [{ method: 'POST', url: '/v1/layers', body: '{"Layer":{"Name":"\\udc00","Path":"http://127.0.0.1:1/x","Format":"Docker"}}' }, 400],
      [{ method: 'POST', url: '/v1/layers', body: {} }, 400],
      [{ method: 'GET', url: `${NS}/vulnerabilities?limit=0` }, 400],
      [{ method: 'GET', url: `${NS}/vulnerabilities?limit=10&page=not-a-token` }, 400],
      [{ method: 'GET', url: `/v1/notifications/${notification}?limit=x` }, 400],
      [{ method: 'GET', url: '/v1/layers/base?features', headers: { 'x-clair-api-revision': 'Z' } }, 400],
    ];
    for (const [call, status] of cases) await refuses(call, status);
  });

  it('ancestry API writes refuse bad bodies and names, storing nothing', async () => {
    const layer = { hash: 'sha256:base', path: registry.url('/base.tar.gz') };
    const cases: Array<[Call, number]> = [
      [{ method: 'POST', url: '/ancestry', body: '{"ancestry_name":' }, 400],
      [{ method: 'POST', url: '/ancestry', body: { ancestry_name: 'team/app', format: 'Docker', layers: [] } }, 400],
      [{ method: 'POST', url: '/ancestry', body: { ancestry_name: 'team/app', format: 'Docker', layers: 'x' } }, 400],
      [{ method: 'POST', url: '/ancestry', body: { ancestry_name: 'team/app', format: 'tar', layers: [layer] } }, 400],
      [{ method: 'POST', url: '/ancestry', body: { ancestry_name: 'n'.repeat(2000), format: 'Docker', layers: [layer] } }, 400],
      [{ method: 'POST', url: '/ancestry', body: '{"ancestry_name":"team/\\ud800","format":"Docker","layers":[]}' }, 400],
      [
        {
          method: 'POST',
          url: '/ancestry',
          body: { ancestry_name: 'team/app', format: 'Docker', layers: [{ hash: 'sha256:new', path: registry.url('/not-a-layer') }] },
        },
        400,
      ],
      [
        {
          method: 'POST',
          url: '/ancestry',
          body: { ancestry_name: 'team/app', format: 'Docker', layers: [layer, { hash: 'h2', path: registry.url('/missing') }] },
        },
        400,
      ],
      [
        { method: 'POST', url: '/ancestry', body: `{"ancestry_name":"x","format":"Docker","layers":[${'['.repeat(40)}${']'.repeat(40)}]}` },
        400,
      ],
      [{ method: 'POST', url: '/ancestry', body: 'x'.repeat((1 << 20) + 1) }, 413],
      [{ method: 'DELETE', url: '/notifications/unknown' }, 404],
      [{ method: 'DELETE', url: '/notifications/%E0%A4%A' }, 400],
      [{ method: 'GET', url: `/notifications/${notification}?limit=0` }, 400],
      [{ method: 'GET', url: `/notifications/${notification}?old_vulnerability_page=garbage` }, 400],
    ];
    for (const [call, status] of cases) await refuses(call, status);
    await writes({ method: 'POST', url: '/ancestry', body: { ancestry_name: 'team/other', format: 'Docker', layers: [layer] } });
  });

  // Last: its valid calls delete what the other tests refuse to touch.
  it('every v1 write route refuses X-Clair-Api-Revision: C before writing, and writes with B', async () => {
    // In this order each valid call still has what it writes to (the layer is deleted last).
    for (const call of writeRoutes()) {
      await refuses({ ...call, headers: { 'x-clair-api-revision': 'C' } }, 400);
      await writes({ ...call, headers: { 'x-clair-api-revision': 'B' } });
    }
  });
});

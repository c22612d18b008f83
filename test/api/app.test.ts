import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildHealthApp } from '../../src/app.js';
import { createPool } from '../../src/store/pool.js';
import { json, testApp } from '../helpers/app.js';
import { freshDatabase, silentLog } from '../helpers/db.js';
import { relayedDatabase } from '../helpers/relay.js';
import { whenDone } from '../helpers/when-done.js';

describe('errors and routing', () => {
  it('answers unknown routes with the v1 error envelope', async () => {
    const { app } = await testApp();
    const res = await app.inject({ url: '/v1/nothing-here?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe('application/json;charset=utf-8');
    expect(json(res)).toEqual({ Error: { Message: 'no route for GET /v1/nothing-here' } });
  });

  it('answers 503 while the database is unreachable and recovers when it returns', async () => {
    const relay = await relayedDatabase(await freshDatabase());
    const pool = createPool({ ...relay.connection, connectionTimeoutMillis: 1000 }, 4, silentLog);
    whenDone(() => pool.end());
    const { app } = await testApp({ pool });
    const health = buildHealthApp({ pool, log: silentLog });
    whenDone(() => health.close());
    const queueScan = () =>
      app.inject({ method: 'POST', url: '/tarsier/v1/images?wait=false', payload: { reference: 'registry.example/team/app:1' } });

    expect((await app.inject({ url: '/v1/namespaces' })).statusCode).toBe(200);
    expect(json(await health.inject({ url: '/health' }))).toEqual({ status: 'ok' });

    relay.cut();
    const down = await app.inject({ url: '/v1/namespaces' });
    expect(down.statusCode).toBe(503);
    expect(json(down)).toEqual({ Error: { Message: 'the database is unavailable; retry shortly' } });
    const write = await app.inject({
      method: 'POST',
      url: '/v1/namespaces/debian%3A12/vulnerabilities',
      payload: { Vulnerability: { Name: 'CVE-1', Severity: 'Low' } },
    });
    expect(write.statusCode).toBe(503);
    const queued = await queueScan();
    expect(queued.statusCode).toBe(503);
    expect(json(queued)).toEqual({ Error: { Message: 'the database is unavailable; retry shortly' } });
    const status = await app.inject({ url: '/status' });
    expect(status.statusCode).toBe(503);
    expect(json(status)).toEqual({
      error: 'the database is unavailable; retry shortly',
      code: 14,
      message: 'the database is unavailable; retry shortly',
    });
    const sick = await health.inject({ url: '/health' });
    expect(sick.statusCode).toBe(503);
    expect(json(sick)).toEqual({ status: 'unavailable', message: 'the database does not answer' });

    relay.restore();
    expect((await app.inject({ url: '/v1/namespaces' })).statusCode).toBe(200);
    expect((await health.inject({ url: '/health' })).statusCode).toBe(200);
    // Scans are queued again: the queue's first use, which failed, is no answer for good.
    expect((await queueScan()).statusCode).toBe(202);
  });

  it('answers 503 when a request outlives api.timeout, and keeps serving', async () => {
    const { app } = await testApp({
      yaml: '  api:\n    timeout: 100ms',
      routes: (a) => a.get('/slow', () => new Promise((resolve) => setTimeout(() => resolve({ late: true }), 400))),
    });
    const res = await app.inject({ url: '/slow' });
    expect(res.statusCode).toBe(503);
    expect(json(res)).toEqual({
      Error: { Message: 'the server did not finish the request within the configured timeout (clair.api.timeout)' },
    });
    expect((await app.inject({ url: '/v1/namespaces' })).statusCode).toBe(200);
  });
});

describe('API authentication', () => {
  const psk = randomBytes(32);
  const yaml = `  api:\n    auth:\n      tokens: [s3cret-token]\n      psk: ${psk.toString('base64')}`;

  function jwt(claims: Record<string, unknown>, key = psk): string {
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const body = `${enc({ alg: 'HS256', typ: 'JWT' })}.${enc(claims)}`;
    return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
  }

  it('is off unless configured', async () => {
    const { app } = await testApp();
    expect((await app.inject({ url: '/v1/namespaces' })).statusCode).toBe(200);
  });

  it('requires a static bearer token or a valid HS256 JWT when configured', async () => {
    const { app } = await testApp({ yaml });
    const get = (authorization?: string) => app.inject({ url: '/v1/namespaces', headers: authorization ? { authorization } : {} });
    const none = await get();
    expect(none.statusCode).toBe(401);
    expect(json(none)).toEqual({ Error: { Message: 'this API requires a credential: send "Authorization: Bearer <token>"' } });
    expect((await get('Bearer s3cret-token')).statusCode).toBe(200);
    expect((await get('Bearer wrong-token')).statusCode).toBe(401);
    const now = Math.floor(Date.now() / 1000);
    expect((await get(`Bearer ${jwt({ sub: 'ci', exp: now + 300 })}`)).statusCode).toBe(200);
    expect((await get(`Bearer ${jwt({ sub: 'ci', exp: now - 3600 })}`)).statusCode).toBe(401);
    expect((await get(`Bearer ${jwt({ sub: 'ci' }, randomBytes(32))}`)).statusCode).toBe(401);
    expect((await app.inject({ url: '/metrics' })).statusCode).toBe(401);
  });

  it('refuses JWT time claims that are not numbers (RFC 7519 NumericDate), other algorithms, and tokens not yet valid', async () => {
    const { app } = await testApp({ yaml });
    const get = (token: string) => app.inject({ url: '/v1/namespaces', headers: { authorization: `Bearer ${token}` } });
    const now = Math.floor(Date.now() / 1000);
    for (const claims of [
      { exp: String(now + 300) },
      { exp: null },
      { exp: [now + 300] },
      { nbf: String(now - 10) },
      { iat: 'yesterday' },
    ]) {
      expect((await get(jwt({ sub: 'ci', ...claims }))).statusCode, JSON.stringify(claims)).toBe(401);
    }
    expect((await get(jwt({ sub: 'ci', nbf: now + 3600 }))).statusCode).toBe(401);
    expect((await get(jwt({ sub: 'ci', exp: now + 300, nbf: now - 10, iat: now }))).statusCode).toBe(200);
    // A token without exp is accepted unless api.auth.requireexp says otherwise.
    expect((await get(jwt({ sub: 'ci' }))).statusCode).toBe(200);
    const strict = await testApp({ yaml: `${yaml}\n      requireexp: true` });
    const strictGet = (token: string) => strict.app.inject({ url: '/v1/namespaces', headers: { authorization: `Bearer ${token}` } });
    expect((await strictGet(jwt({ sub: 'ci' }))).statusCode).toBe(401);
    expect((await strictGet(jwt({ sub: 'ci', exp: now + 300 }))).statusCode).toBe(200);
    // alg "none" and a token signed with the key as an HS512 secret are refused.
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'ci' })).toString('base64url')}.`;
    expect((await get(none)).statusCode).toBe(401);
    const body = `${Buffer.from(JSON.stringify({ alg: 'HS512', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'ci' })).toString('base64url')}`;
    expect((await get(`${body}.${createHmac('sha512', psk).update(body).digest('base64url')}`)).statusCode).toBe(401);
  });

  it('refuses a JWT issued in the future beyond the 60 s clock skew, in each API dialect', async () => {
    const { app } = await testApp({ yaml });
    const now = Math.floor(Date.now() / 1000);
    const ahead = jwt({ sub: 'ci', iat: now + 3600, exp: now + 7200 });
    const skewed = jwt({ sub: 'ci', iat: now + 10, exp: now + 7200 });
    const get = (url: string, token: string) => app.inject({ url, headers: { authorization: `Bearer ${token}` } });

    const v1 = await get('/v1/namespaces', ahead);
    expect(v1.statusCode).toBe(401);
    expect(json(v1).Error.Message).toMatch(/issued in the future/);
    const ancestry = await get('/status', ahead);
    expect(ancestry.statusCode).toBe(401);
    expect(json(ancestry)).toMatchObject({ code: 16, message: expect.stringMatching(/issued in the future/) });
    const images = await get('/tarsier/v1/images', ahead);
    expect(images.statusCode).toBe(401);
    expect(json(images).Error.Message).toMatch(/issued in the future/);

    // A clock a few seconds ahead of this server's is within the tolerated skew.
    expect((await get('/v1/namespaces', skewed)).statusCode).toBe(200);
    expect((await get('/status', skewed)).statusCode).toBe(200);
  });
});

describe('metrics', () => {
  it('counts requests by route pattern and status', async () => {
    const { app } = await testApp();
    await app.inject({ url: '/v1/namespaces' });
    await app.inject({ url: '/v1/namespaces/debian%3A1/vulnerabilities/CVE-1' });
    const res = await app.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toContain('tarsier_http_requests_total{method="GET",route="/v1/namespaces",status="200"} 1');
    expect(res.body).toContain('tarsier_http_requests_total{method="GET",route="/v1/namespaces/:ns/vulnerabilities/:name",status="404"} 1');
    expect(res.body).toContain('tarsier_http_request_duration_seconds_bucket');
  });
});

describe('server faults', () => {
  it('answer 500 with a message that leaks no internals, and the server keeps serving', async () => {
    const t = await testApp();
    await t.pool.query('ALTER TABLE namespace RENAME TO namespace_gone');
    const res = await t.app.inject({ url: '/v1/namespaces' });
    expect(res.statusCode).toBe(500);
    expect(json(res)).toEqual({ Error: { Message: 'internal server error; the server log has the details' } });
    expect(res.body).not.toMatch(/namespace_gone|relation|SELECT/);
    await t.pool.query('ALTER TABLE namespace_gone RENAME TO namespace');
    expect((await t.app.inject({ url: '/v1/namespaces' })).statusCode).toBe(200);
  });
});

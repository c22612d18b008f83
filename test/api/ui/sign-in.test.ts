/**
 * The dashboard's sign-in, without a browser: a post from another site's page is refused (login
 * CSRF), `next` only ever leads to a dashboard page, the cookie's attributes, and the API still
 * wanting its own header. What the session is and how it ends: sessions.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { testApp } from '../../helpers/app.js';

const TOKEN = 'sign-in-test-token';
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const HOST = 'tarsier.example:6060';

/** POST /ui/login from a page of origin (none: no Origin header). */
const signIn = (t: Awaited<ReturnType<typeof testApp>>, fields: Record<string, string>, origin?: string) =>
  t.app.inject({
    method: 'POST',
    url: '/ui/login',
    headers: { ...FORM, host: HOST, ...(origin ? { origin } : {}) },
    payload: form(fields),
  });

describe('dashboard sign-in', () => {
  it('refuses a post from another origin, and opens a session for this one', async () => {
    const t = await testApp({ yaml: `  api:\n    auth:\n      tokens: [${TOKEN}]` });
    const forged = await signIn(t, { token: TOKEN, next: '/ui' }, 'https://evil.example');
    expect(forged.statusCode).toBe(400);
    expect(forged.headers['content-type']).toContain('text/html');
    expect(forged.headers['set-cookie']).toBeUndefined();
    expect(forged.headers['content-security-policy']).toContain("default-src 'self'");

    const ok = await signIn(t, { token: TOKEN, next: '/ui/feeds' }, `http://${HOST}`);
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe('/ui/feeds');
    expect(ok.headers['set-cookie']).toMatch(/^tarsier_session=[\w-]{43}; Path=\/ui; HttpOnly; SameSite=Strict$/);
    const cookie = String(ok.headers['set-cookie']).split(';')[0]!;
    expect((await t.app.inject({ url: '/ui/feeds', headers: { cookie } })).statusCode).toBe(200);
    // The cookie opens the dashboard only.
    expect((await t.app.inject({ url: '/tarsier/v1/images', headers: { cookie } })).statusCode).toBe(401);

    const wrong = await signIn(t, { token: 'nope' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('returns only to a dashboard page after signing in', async () => {
    const t = await testApp({ yaml: `  api:\n    auth:\n      tokens: [${TOKEN}]` });
    for (const [next, location] of [
      ['/ui/images/sha256:abc?x=1', '/ui/images/sha256:abc?x=1'],
      ['https://evil.example/ui', '/ui'],
      ['//evil.example/ui', '/ui'],
      ['/uix', '/ui'],
      ['/ui/\r\nSet-Cookie: a=b', '/ui'],
      ['/ui/é', '/ui'],
    ]) {
      const res = await signIn(t, { token: TOKEN, next: next! });
      expect(res.statusCode, next).toBe(303);
      expect(res.headers.location, next).toBe(location);
    }
  });
});

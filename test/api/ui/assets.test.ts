/**
 * The dashboard's static files: each served with its type and an ETag; a name it does not have is
 * the dashboard's HTML 404 page, as for any other dashboard URL.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../../helpers/app.js';

describe('dashboard assets', () => {
  let t: TestApp;
  beforeAll(async () => void (t = await testApp()));

  it('are served with their type and an ETag, 304 when unchanged', async () => {
    const css = await t.app.inject({ url: '/ui/assets/app.css' });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    const etag = css.headers.etag as string;
    expect(etag).toBeTruthy();
    expect((await t.app.inject({ url: '/ui/assets/app.css', headers: { 'if-none-match': etag } })).statusCode).toBe(304);
  });

  it('answer a name they do not have with the dashboard’s HTML 404 page', async () => {
    for (const name of ['nope.js', 'app.css.map', '..%2Fapp.css']) {
      const res = await t.app.inject({ url: `/ui/assets/${name}` });
      expect(res.statusCode, name).toBe(404);
      expect(res.headers['content-type'], name).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy'], name).toContain("default-src 'self'");
      expect(res.headers['cache-control'], name).toBe('no-store');
      expect(res.body, name).toContain('<h1>Not found</h1>');
      expect(res.body, name).toContain('<a href="/ui">Back to the images</a>');
      expect(res.body, name).toContain('the dashboard has no file named');
    }
    const named = await t.app.inject({ url: '/ui/assets/%3Cb%3Ex.js' });
    expect(named.statusCode).toBe(404);
    expect(named.body).toContain('the dashboard has no file named &lt;b&gt;x.js');
    // The same page as a dashboard URL no route has.
    const unrouted = await t.app.inject({ url: '/ui/nowhere' });
    expect(unrouted.statusCode).toBe(404);
    expect(unrouted.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(unrouted.body).toContain('<h1>Not found</h1>');
  });
});

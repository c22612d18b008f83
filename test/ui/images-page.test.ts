/**
 * The dashboard's images list in a real headless Chromium (Debian's, via playwright-core): signing
 * in with the API token, the numbers of every row against the images API, the risk order, the
 * filters, the link to each image, keyboard use and the page's structure.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { imagesPageOf, type ImagesQuery } from '../../src/api/ui/pages/images.js';
import { missingForDashboard, startDashboard, TOKEN, type Dashboard } from '../helpers/dashboard.js';

const missing = missingForDashboard();

describe.skipIf(missing.length > 0)(`the images page${missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : ''}`, () => {
  let d: Dashboard;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    d = await startDashboard();
    context = await d.browser.newContext({ viewport: { width: 1366, height: 900 } });
    page = await context.newPage();
  });

  it('asks for the API token once, refuses a wrong one, and opens a session with the right one', async () => {
    await page.goto(`${d.origin}/ui?repository=team/app`);
    expect(new URL(page.url()).pathname).toBe('/ui/login');
    await page.getByLabel('API token').fill('wrong-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('refused');

    await page.getByLabel('API token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back where it was going, with its query.
    await page.waitForURL(`${d.origin}/ui?repository=team/app`);
    const cookies = await context.cookies();
    expect(cookies).toEqual([expect.objectContaining({ name: 'tarsier_session', httpOnly: true, sameSite: 'Strict', expires: -1 })]);
    // The browser keeps a session id, not the token.
    expect(cookies[0]!.value).not.toContain(TOKEN);
    // The API itself still wants the header: the cookie is the dashboard's alone.
    expect((await page.request.get(`${d.origin}/tarsier/v1/images`)).status()).toBe(401);
  });

  it('shows every image with the counts the images API gives, most at risk first', async () => {
    await page.goto(`${d.origin}/ui`);
    const api = (await d.api('/tarsier/v1/images?limit=1000')).Images as Array<{
      Digest: string;
      Summary: Record<string, { Total: number; Fixable: number }>;
      KnownExploited: number;
    }>;
    const rows = page.getByTestId('image-row');
    await expect.poll(() => rows.count()).toBe(api.length);
    // An image using a namespace without vulnerability data shows its counts as unknown (the API's null), never 0.
    const shown = await rows.evaluateAll((trs) =>
      trs.map((tr) =>
        tr.querySelector('[data-testid="counts-unknown"]')
          ? { digest: tr.getAttribute('data-digest'), kev: null, counts: null }
          : {
              digest: tr.getAttribute('data-digest'),
              kev: Number(tr.querySelector('[data-testid="kev-count"]')!.textContent),
              counts: Object.fromEntries(
                [...tr.querySelectorAll('[data-testid^="count-"]')]
                  .filter((td) => td.getAttribute('data-total') !== '0')
                  .map((td) => [
                    td.getAttribute('data-testid')!.slice('count-'.length),
                    { Total: Number(td.getAttribute('data-total')), Fixable: Number(td.getAttribute('data-fixable')) },
                  ]),
              ),
            },
      ),
    );
    for (const image of api) {
      expect(shown.find((s) => s.digest === image.Digest)).toEqual({
        digest: image.Digest,
        kev: image.KnownExploited,
        counts: image.Summary,
      });
      // The list reads the stored summary: it must equal the image's own count, made from its packages.
      const detail = (await d.api(`/tarsier/v1/images/${image.Digest}`)).Image;
      expect({ counts: detail.Summary, kev: detail.KnownExploited }).toEqual({ counts: image.Summary, kev: image.KnownExploited });
    }
    // Known exploited first (the two Debian 9 images), then the Critical one, then the Debian 8 image (no debian:8 data) last.
    const order = shown.map((s) => s.digest);
    const v1 = d.digests.get('team/app:v1')!;
    const base = d.digests.get('team/base:9')!;
    expect(new Set(order.slice(0, 2))).toEqual(new Set([v1, base]));
    expect(order[2]).toBe(d.digests.get('team/app:v2'));
    expect(order[3]).toBe(d.digests.get('team/tools:latest'));
    // The chart's data: images by their most severe vulnerability.
    const table = await page.getByTestId('severity-chart-table').locator('tbody tr').allTextContents();
    // The Debian 8 image is not "None": nothing was there to look at.
    expect(table.map((r) => r.replace(/\s+/g, ' ').trim())).toEqual(['Critical 3', 'No vulnerability data 1']);
    // uPlot drew the chart.
    await expect.poll(() => page.locator('#severity-chart canvas').count()).toBeGreaterThan(0);
  });

  it('pages through either order, one image a page, by its Next page links, without skipping or repeating an image', async () => {
    const context = { pool: d.t.pool, pageTokens: d.t.pageTokens, now: new Date(), enabledSources: [], maxDataAgeMs: 0 };
    for (const sort of ['risk', 'first-seen'] as const) {
      const whole = (await imagesPageOf(context, { sort }, 100)).body.text;
      const digestsOf = (body: string) => [...body.matchAll(/data-testid="image-row" data-digest="([^"]+)"/g)].map((m) => m[1]!);
      expect(digestsOf(whole)).toHaveLength(4);
      const paged: string[] = [];
      let query: ImagesQuery = { sort };
      for (let pages = 0; pages < 10; pages++) {
        const body = (await imagesPageOf(context, query, 1)).body.text;
        paged.push(...digestsOf(body));
        const next = /data-testid="next-page" rel="next" href="([^"]+)"/.exec(body)?.[1];
        if (!next) break;
        query = Object.fromEntries(new URL(next.replace(/&amp;/g, '&'), 'http://x').searchParams) as ImagesQuery;
      }
      expect(paged, sort).toEqual(digestsOf(whole));
    }
  });

  it('filters by repository, tag, severity and known exploited, with the form and by URL', async () => {
    await page.goto(`${d.origin}/ui`);
    await page.getByLabel('Repository').fill('team/app');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/repository=team%2Fapp/);
    expect(await page.getByTestId('image-row').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-digest')))).toEqual(
      expect.arrayContaining([d.digests.get('team/app:v1'), d.digests.get('team/app:v2')]),
    );
    expect(await page.getByTestId('image-row').count()).toBe(2);

    await page.getByLabel('Known exploited only').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/kev=on/);
    expect(await page.getByTestId('image-row').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-digest')))).toEqual([
      d.digests.get('team/app:v1'),
    ]);

    const api = (await d.api('/tarsier/v1/images?min_severity=Critical&limit=1000')).Images.map((i: { Digest: string }) => i.Digest);
    await page.goto(`${d.origin}/ui?severity=Critical`);
    expect((await page.getByTestId('image-row').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-digest')))).sort()).toEqual(
      api.sort(),
    );
    await page.goto(`${d.origin}/ui?tag=latest`);
    expect(await page.getByTestId('image-row').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-digest')))).toEqual([
      d.digests.get('team/tools:latest'),
    ]);
    await page.goto(`${d.origin}/ui?repository=nobody/here`);
    await expect.poll(() => page.getByRole('status').textContent()).toContain('No image matches');
  });

  it('is usable from the keyboard: a skip link, then the navigation, and each image a link', async () => {
    await page.goto(`${d.origin}/ui`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement?.id')).toBe('main');
    // Tables say what they hold, and their headers what they head.
    const tables = await page.locator('table').evaluateAll((ts) =>
      ts.map((t) => ({
        caption: t.querySelector('caption')?.textContent ?? '',
        scoped: [...t.querySelectorAll('th')].every((th) => th.hasAttribute('scope')),
      })),
    );
    for (const t of tables) {
      expect(t.caption).not.toBe('');
      expect(t.scoped).toBe(true);
    }
    const link = page.getByRole('link', { name: /team\/tools/ });
    await link.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${d.origin}/ui/images/${d.digests.get('team/tools:latest')}`);
  });

  it('answers an unknown page and a bad filter with an HTML page, not JSON', async () => {
    const missingPage = await page.goto(`${d.origin}/ui/nothing-here`);
    expect(missingPage!.status()).toBe(404);
    expect(missingPage!.headers()['content-type']).toContain('text/html');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
    const bad = await page.goto(`${d.origin}/ui?severity=Bad`);
    expect(bad!.status()).toBe(400);
    expect(await page.getByRole('alert').textContent()).toContain('severity');
  });
});

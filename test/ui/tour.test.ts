/**
 * A walk through the dashboard in a real headless Chromium: from the images list to an image, to a
 * vulnerability, to the images it affects; the changes and the feeds; each page's numbers against
 * the API; contrast of text and badges in the light and dark schemes. With TARSIER_UI_SCREENSHOTS
 * set to a directory (docs/ui), each page's screenshot is written there for the README.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { missingForDashboard, startDashboard, TOKEN, type Dashboard } from '../helpers/dashboard.js';

const missing = missingForDashboard();
const SCREENSHOTS = process.env.TARSIER_UI_SCREENSHOTS;

/** The WCAG contrast ratio of every element matching selector against its own background (or the page's). */
const CONTRASTS = `(selector) => {
  const channel = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const rgb = (text) => (text.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c;
    }
    return rgb(getComputedStyle(document.documentElement).backgroundColor);
  };
  return [...document.querySelectorAll(selector)].map((el) => {
    const a = luminance(rgb(getComputedStyle(el).color));
    const b = luminance(background(el));
    return { text: el.textContent.trim().slice(0, 40), ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) };
  });
}`;

describe.skipIf(missing.length > 0)(
  `a walk through the dashboard${missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : ''}`,
  () => {
    let d: Dashboard;
    let context: BrowserContext;
    let page: Page;
    const shot = async (name: string) => {
      if (!SCREENSHOTS) return;
      await mkdir(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
    };

    beforeAll(async () => {
      d = await startDashboard();
      context = await d.browser.newContext({ viewport: { width: 1366, height: 900 } });
      page = await context.newPage();
      await page.goto(`${d.origin}/ui/login`);
      await page.getByLabel('API token').fill(TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${d.origin}/ui`);
    });

    it('goes from the list to an image whose counts, findings and layers are the API’s', async () => {
      await shot('images');
      const digest = d.digests.get('team/app:v1')!;
      await page
        .locator(`[data-testid="image-row"][data-digest="${digest}"]`)
        .getByRole('link', { name: /team\/app/ })
        .click();
      await page.waitForURL(`${d.origin}/ui/images/${digest}`);
      const api = (await d.api(`/tarsier/v1/images/${digest}`)).Image;
      for (const [severity, c] of Object.entries(api.Summary as Record<string, { Total: number; Fixable: number }>)) {
        expect(Number(await page.getByTestId(`count-${severity}`).textContent()), severity).toBe(c.Total);
        expect(Number(await page.getByTestId(`fixable-${severity}`).textContent()), severity).toBe(c.Fixable);
      }
      expect(Number(await page.getByTestId('kev-count').textContent())).toBe(api.KnownExploited);
      const findings = await page
        .getByTestId('finding')
        .evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-vulnerability')} ${r.getAttribute('data-package')}`));
      const expected = (api.Packages as Array<{ Name: string; Vulnerabilities: Array<{ Name: string }> }>).flatMap((p) =>
        p.Vulnerabilities.map((v) => `${v.Name} ${p.Name}`),
      );
      expect([...findings].sort()).toEqual([...expected].sort());
      // The known exploited finding leads; its layer link lands on the layer's row.
      expect(findings[0]).toBe('CVE-2021-44228 bash');
      expect(await page.getByTestId('layer').count()).toBe(api.Layers.length);
      // What to upgrade: bash to the version fixing both its High+ findings.
      expect(await page.getByTestId('upgrade').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-package')))).toEqual(['bash']);
      await shot('image');
    });

    it('goes from a finding to its vulnerability, whose affected images are the API’s, and back to an image', async () => {
      await page
        .locator('[data-testid="finding"][data-vulnerability="CVE-2021-44228"]')
        .getByRole('link', { name: 'CVE-2021-44228' })
        .click();
      await page.waitForURL(`${d.origin}/ui/vulnerabilities/CVE-2021-44228`);
      const api = (await d.api('/tarsier/v1/vulnerabilities/CVE-2021-44228/images')).Images as Array<{ Digest: string }>;
      const shown = await page.getByTestId('exposed-image').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-digest')));
      expect(shown.sort()).toEqual(api.map((i) => i.Digest).sort());
      expect(await page.getByTestId('kev-notice').textContent()).toContain('2021-12-10');
      // The description's markup is text, never markup.
      expect(await page.getByTestId('description').first().textContent()).toContain('<b>(seeded)</b>');
      await shot('vulnerability');
      await page.getByTestId('exposed-image').first().getByRole('link').first().click();
      await page.waitForURL(/\/ui\/images\/sha256:/);
    });

    it('finds a vulnerability from the search box', async () => {
      await page.getByLabel('Vulnerability').fill('cve-1999-0005');
      await page.getByRole('button', { name: 'Find' }).click();
      await page.waitForURL(`${d.origin}/ui/vulnerabilities/CVE-1999-0005`);
      expect(await page.getByTestId('vulnerability-name').textContent()).toContain('CVE-1999-0005');
    });

    it('shows the changes, newest first, each with the number of images the API lists', async () => {
      // A change made after the images were scanned: a new fix for zlib's unfixed vulnerability.
      const res = await d.t.app.inject({
        method: 'PUT',
        url: '/v1/namespaces/debian%3A9/vulnerabilities/CVE-1999-0005/fixes/zlib',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { Feature: { Name: 'zlib', NamespaceName: 'debian:9', Version: '1:1.2.8.dfsg-5+deb9u1' } },
      });
      expect(res.statusCode, res.body).toBe(200);
      await page.getByRole('link', { name: 'Changes' }).click();
      await page.waitForURL(`${d.origin}/ui/changes`);
      const changes = page.getByTestId('change');
      const first = await changes.first().getAttribute('data-notification');
      const notification = (await d.api(`/tarsier/v1/notifications/${first}`)).Notification;
      expect(notification.New.Vulnerability.Name).toBe('CVE-1999-0005');
      expect(Number(await changes.first().getByTestId('affected-count').first().textContent())).toBe(notification.New.Images.length);
      await shot('changes');
    });

    it('shows each enabled feed with its records and the data’s age', async () => {
      await page.getByRole('link', { name: 'Feeds' }).click();
      await page.waitForURL(`${d.origin}/ui/feeds`);
      const records = await page
        .locator('tr[data-source]')
        .evaluateAll((rows) =>
          Object.fromEntries(
            rows.map((r) => [r.getAttribute('data-source'), r.querySelector('[data-testid="records"]')!.textContent!.replace(/,/g, '')]),
          ),
        );
      const states = (await d.t.pool.query<{ name: string; record_count: number }>('SELECT name, record_count FROM updater_state')).rows;
      for (const s of states) expect(Number(records[s.name]), s.name).toBe(s.record_count);
      // Only EPSS and KEV ran here (the vulnerabilities came through the API): no vulnerability source ever updated.
      expect(await page.getByTestId('data-age').textContent()).toBe('never');
      const namespaces = await page
        .getByTestId('namespace-row')
        .evaluateAll((rows) => rows.map((r) => [r.getAttribute('data-namespace'), r.getAttribute('data-state')]));
      expect(namespaces).toEqual([
        ['debian:10', 'current'],
        ['debian:8', 'missing'],
        ['debian:9', 'current'],
      ]);
      await shot('feeds');
    });

    it('keeps text and badges readable in the light and the dark scheme (WCAG AA, 4.5:1)', async () => {
      // The change made above re-ranks images: once done, the list says nothing of it.
      await d.summariesSettled();
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const path of ['/ui', `/ui/images/${d.digests.get('team/app:v1')}`]) {
          await page.goto(`${d.origin}${path}`);
          const ratios = (await page.evaluate(`(${CONTRASTS})('.sev, .kev, main p, main td, main th, nav a')`)) as Array<{
            text: string;
            ratio: number;
          }>;
          expect(ratios.length).toBeGreaterThan(5);
          for (const r of ratios) expect(r.ratio, `${scheme} ${path}: "${r.text}"`).toBeGreaterThanOrEqual(4.5);
        }
        if (scheme === 'dark') {
          await page.goto(`${d.origin}/ui`);
          await shot('images-dark');
        }
      }
      await page.emulateMedia({ colorScheme: 'light' });
    });
  },
);

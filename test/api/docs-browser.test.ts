/**
 * /docs in a real browser (Chromium, headless): Swagger UI loads the generated document and shows
 * every operation, and an operation opened shows its parameters. Runs where Chromium is installed
 * (CI installs Debian's chromium); elsewhere it is skipped.
 */
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { json, testApp } from '../helpers/app.js';
import { hasChromium, launchChromium } from '../helpers/browser.js';

describe.runIf(hasChromium())('/docs in a browser', () => {
  it("lists every operation of the document, and shows an operation's parameters", async () => {
    const t = await testApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const doc = json(await t.app.inject({ url: '/docs/json' }));
    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${origin}/docs/`);
      await page.locator('.opblock').first().waitFor();
      const shown = await page
        .locator('.opblock')
        .evaluateAll((blocks) =>
          blocks.map(
            (b) =>
              `${b.querySelector('.opblock-summary-method')?.textContent ?? ''} ${b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''}`,
          ),
        );
      expect(shown.sort()).toEqual(operations.sort());
      const notification = page.locator('#operations-v1_notifications-getNotification');
      await notification.locator('.opblock-summary').click();
      await notification.locator('tr[data-param-name]').first().waitFor();
      const parameters = await notification
        .locator('tr[data-param-name]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-param-name')));
      expect(parameters.sort()).toEqual(['limit', 'name', 'page', 'x-clair-api-revision']);
    } finally {
      await browser.close();
    }
  });
});

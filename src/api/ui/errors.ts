import type { RequestError } from '../request-errors.js';
import { v1ErrorResponse } from '../v1/errors.js';
import { html } from './html.js';
import { layout } from './layout.js';

/** Where the dashboard is served: its URLs answer errors as pages. */
export const UI_PREFIX = '/ui';

/** Whether a request URL belongs to the dashboard. */
export function isUiUrl(url: string): boolean {
  const path = (url.split('?', 1)[0] ?? '').replace(/\/{2,}/g, '/'); // as the router reads it
  return path === UI_PREFIX || path.startsWith(`${UI_PREFIX}/`);
}

export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8';

/** Headers of every dashboard page, error pages included: no framing, no script but its own, no sniffing, not cached. */
export const UI_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** The dashboard's answer to a request error: a page saying what went wrong, with the status the v1 API gives the same code. */
export function uiErrorResponse(problem: RequestError): { status: number; body: string } {
  const { status } = v1ErrorResponse(problem);
  const title = status === 404 ? 'Not found' : status >= 500 ? 'Something went wrong' : 'This request cannot be answered';
  const body = layout({
    title,
    section: 'none',
    body: html`<h1>${title}</h1>
      <p class="notice error" role="alert">${problem.message}</p>
      <p><a href="/ui">Back to the images</a></p>`,
  });
  return { status, body: body.text };
}

import type { RequestError } from '../request-errors.js';
import { v1ErrorResponse } from '../v1/errors.js';
import { MIME_ERROR, type ErrorResponse } from './spec.js';

/** Where Harbor's Pluggable Scanner API is served: its URLs answer errors in its envelope. */
export const HARBOR_API_PREFIX = '/api/v1';

/** Whether a request URL belongs to the Pluggable Scanner API. */
export function isHarborApiUrl(url: string): boolean {
  const path = (url.split('?', 1)[0] ?? '').replace(/\/{2,}/g, '/'); // as the router reads it
  return path === HARBOR_API_PREFIX || path.startsWith(`${HARBOR_API_PREFIX}/`);
}

/**
 * The Pluggable Scanner API's answer to a request error: the spec's ErrorResponse
 * `{"error":{"message"}}` under its own media type, which Harbor appends to the scan job's error,
 * with the status the v1 API gives the same code (the spec names 400, 404, 422, 500 and 501, which
 * those are).
 */
export function harborErrorResponse(problem: RequestError): { status: number; body: ErrorResponse; type: string } {
  return { status: v1ErrorResponse(problem).status, body: { error: { message: problem.message } }, type: MIME_ERROR };
}

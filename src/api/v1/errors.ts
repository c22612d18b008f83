import type { ErrorCode } from '../../errors.js';
import type { RequestError } from '../request-errors.js';

/** The one place where v1 errors become HTTP statuses and {"Error":{"Message":"..."}} bodies. */
const STATUS: Readonly<Record<ErrorCode, number>> = {
  bad_request: 400,
  unauthenticated: 401,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  unprocessable: 422,
  headers_too_large: 431,
  cancelled: 499,
  not_implemented: 501,
  unavailable: 503,
  internal: 500,
};

export const JSON_CONTENT_TYPE = 'application/json;charset=utf-8';

export interface V1ErrorBody {
  Error: { Message: string };
}

export function errorBody(message: string): V1ErrorBody {
  return { Error: { Message: message } };
}

/** The v1 (and /tarsier) answer to a request error. */
export function v1ErrorResponse(problem: RequestError): { status: number; body: V1ErrorBody } {
  return { status: STATUS[problem.code], body: errorBody(problem.message) };
}

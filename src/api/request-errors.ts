import type { FastifyBaseLogger, FastifyError } from 'fastify';
import { isDatabaseUnavailable, TarsierError, unstorableValueMessage, type ErrorCode } from '../errors.js';
import { MAX_NAME_LENGTH } from './limits.js';

/**
 * What went wrong with a request, whatever the API dialect: an error code and the message for the
 * client. Each dialect turns this into its response (src/api/v1/errors.ts, src/api/v3/errors.ts);
 * src/api/edge.ts sends it, logs it and counts it.
 */
export interface RequestError {
  readonly code: ErrorCode;
  readonly message: string;
  /** For method_not_allowed: the methods the path has (the Allow header). */
  readonly allow?: readonly string[];
}

/** Fastify's and Node's HTTP statuses for request errors, as our codes. */
const CODE_OF_STATUS: Readonly<Record<number, ErrorCode>> = {
  401: 'unauthenticated',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
};

/** Fastify's own request errors (routing, parsing, validation, limits) as messages a person can act on. */
function describeFrameworkError(err: FastifyError): RequestError | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'payload_too_large', message: 'request body is larger than the 1 MiB limit' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'unsupported_media_type', message: 'the Content-Type header is not a valid media type: send application/json' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'bad_request', message: 'request body does not match its Content-Length header' };
    case 'FST_ERR_BAD_URL':
      return {
        code: 'bad_request',
        message: 'the URL is not valid: a path segment has a broken percent-encoding (% must be followed by two hex digits of UTF-8)',
      };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { code: 'bad_request', message: `a name in the URL path is longer than the ${MAX_NAME_LENGTH}-character limit` };
    case 'FST_ERR_VALIDATION':
      return { code: 'bad_request', message: err.message };
    default:
      break;
  }
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { code: 'bad_request', message: `request body is not valid JSON: ${err.message}` };
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return { code: CODE_OF_STATUS[err.statusCode] ?? 'bad_request', message: err.message };
  }
  return undefined;
}

/** The answer to a request still unfinished after clair.api.timeout (Clair's TimeoutHandler: 503). */
export const API_TIMEOUT_ERROR: RequestError = {
  code: 'unavailable',
  message: 'the server did not finish the request within the configured timeout (clair.api.timeout)',
};

/** Classifies an error thrown while handling a request (over HTTP or gRPC), logging the ones that are the server's. */
export function classifyRequestError(thrown: FastifyError | Error, log: FastifyBaseLogger): RequestError {
  const err = thrown as FastifyError;
  if (err instanceof TarsierError) {
    if (err.code === 'internal') log.error({ err }, 'request failed');
    return { code: err.code, message: err.message };
  }
  const framework = describeFrameworkError(err);
  if (framework) return framework;
  const unstorable = unstorableValueMessage(err);
  if (unstorable) return { code: 'bad_request', message: unstorable };
  if (isDatabaseUnavailable(err)) {
    log.warn({ err }, 'database unavailable');
    return { code: 'unavailable', message: 'the database is unavailable; retry shortly' };
  }
  log.error({ err }, 'request failed');
  return { code: 'internal', message: 'internal server error; the server log has the details' };
}

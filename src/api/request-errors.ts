import type { FastifyBaseLogger, FastifyError } from 'fastify';
import { isDatabaseUnavailable, TarsierError, unstorableValueMessage, type ErrorCode } from '../errors.js';

/**
 * What went wrong with a request, whatever the API dialect: an error code, the message for the
 * client and, for Fastify's own request errors, the HTTP status it chose (e.g. 413). Each dialect
 * turns this into its response (src/api/v1/errors.ts, src/api/v3/errors.ts).
 */
export interface RequestError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly httpStatus?: number;
}

/** Fastify's own request errors (parsing, validation, limits) as messages a person can act on. */
function describeFrameworkError(err: FastifyError): RequestError | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'bad_request', httpStatus: 413, message: 'request body is larger than the 1 MiB limit' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'bad_request', message: 'request body is empty: send a JSON object' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'bad_request', httpStatus: 415, message: 'request body must be JSON' };
    case 'FST_ERR_VALIDATION':
      return { code: 'bad_request', message: `invalid request: ${err.message}` };
    default:
      break;
  }
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { code: 'bad_request', message: `request body is not valid JSON: ${err.message}` };
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    const code: ErrorCode = err.statusCode === 401 ? 'unauthenticated' : err.statusCode === 404 ? 'not_found' : 'bad_request';
    return { code, httpStatus: err.statusCode, message: err.message };
  }
  return undefined;
}

/** Classifies an error thrown while handling a request, logging the ones that are the server's. */
export function classifyRequestError(err: FastifyError, log: FastifyBaseLogger): RequestError {
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

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, TarsierError, unstorableValueMessage, type ErrorCode } from '../../errors.js';

/** The one place where v1 errors become HTTP statuses and {"Error":{"Message":"..."}} bodies. */
const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthenticated: 401,
  not_found: 404,
  unprocessable: 422,
  unavailable: 503,
  internal: 500,
};

export const JSON_CONTENT_TYPE = 'application/json;charset=utf-8';

export function errorBody(message: string): { Error: { Message: string } } {
  return { Error: { Message: message } };
}

function send(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).type(JSON_CONTENT_TYPE).send(errorBody(message));
}

/** Fastify's own request errors (parsing, validation, limits) as messages a person can act on. */
function describeFrameworkError(err: FastifyError): { status: number; message: string } | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, message: 'request body is larger than the 1 MiB limit' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, message: 'request body is empty: send a JSON object' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, message: 'request body must be JSON' };
    case 'FST_ERR_VALIDATION':
      return { status: 400, message: `invalid request: ${err.message}` };
    default:
      break;
  }
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { status: 400, message: `request body is not valid JSON: ${err.message}` };
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return { status: err.statusCode, message: err.message };
  }
  return undefined;
}

export function v1ErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof TarsierError) {
    if (err.code === 'internal') request.log.error({ err }, 'request failed');
    return send(reply, STATUS[err.code], err.message);
  }
  const framework = describeFrameworkError(err);
  if (framework) return send(reply, framework.status, framework.message);
  const unstorable = unstorableValueMessage(err);
  if (unstorable) return send(reply, 400, unstorable);
  if (isDatabaseUnavailable(err)) {
    request.log.warn({ err }, 'database unavailable');
    return send(reply, 503, 'the database is unavailable; retry shortly');
  }
  request.log.error({ err }, 'request failed');
  return send(reply, 500, 'internal server error; the server log has the details');
}

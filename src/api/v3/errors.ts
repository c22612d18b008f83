import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, TarsierError, unstorableValueMessage, type ErrorCode } from '../../errors.js';
import { JSON_CONTENT_TYPE } from '../v1/errors.js';

/**
 * The one place where ancestry-API errors become grpc-gateway responses: the gRPC status code
 * carried in the body, the HTTP status grpc-gateway derives from it (runtime.HTTPStatusFromCode),
 * and the message twice, as `error` (what Clair's gateway wrote) and `message` (what later gateway
 * versions write), so clients of either kind find it.
 */
export const GRPC = {
  InvalidArgument: 3,
  NotFound: 5,
  Internal: 13,
  Unavailable: 14,
  Unauthenticated: 16,
} as const;
export type GrpcCode = (typeof GRPC)[keyof typeof GRPC];

const HTTP_STATUS: Readonly<Record<GrpcCode, number>> = {
  [GRPC.InvalidArgument]: 400,
  [GRPC.NotFound]: 404,
  [GRPC.Internal]: 500,
  [GRPC.Unavailable]: 503,
  [GRPC.Unauthenticated]: 401,
};

/**
 * TarsierError codes in this dialect. A layer that cannot be used (422 in v1) is an invalid
 * argument here: gRPC has no "unprocessable", and the client must change the request.
 */
const BY_ERROR_CODE: Readonly<Record<ErrorCode, GrpcCode>> = {
  bad_request: GRPC.InvalidArgument,
  unprocessable: GRPC.InvalidArgument,
  not_found: GRPC.NotFound,
  unavailable: GRPC.Unavailable,
  unauthenticated: GRPC.Unauthenticated,
  internal: GRPC.Internal,
};

export interface GrpcErrorBody {
  error: string;
  code: GrpcCode;
  message: string;
}

export function grpcErrorBody(code: GrpcCode, message: string): GrpcErrorBody {
  return { error: message, code, message };
}

function send(reply: FastifyReply, code: GrpcCode, message: string): FastifyReply {
  return reply.code(HTTP_STATUS[code]).type(JSON_CONTENT_TYPE).send(grpcErrorBody(code, message));
}

/** Fastify's own request errors (parsing, validation, limits): all invalid arguments here. */
function describeFrameworkError(err: FastifyError): { code: GrpcCode; message: string } | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: GRPC.InvalidArgument, message: 'request body is larger than the 1 MiB limit' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: GRPC.InvalidArgument, message: 'request body is empty: send a JSON object' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: GRPC.InvalidArgument, message: 'request body must be JSON' };
    case 'FST_ERR_VALIDATION':
      return { code: GRPC.InvalidArgument, message: `invalid request: ${err.message}` };
    default:
      break;
  }
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { code: GRPC.InvalidArgument, message: `request body is not valid JSON: ${err.message}` };
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    if (err.statusCode === 401) return { code: GRPC.Unauthenticated, message: err.message };
    if (err.statusCode === 404) return { code: GRPC.NotFound, message: err.message };
    return { code: GRPC.InvalidArgument, message: err.message };
  }
  return undefined;
}

/** The error handler of the ancestry API's routes; same signature as v1ErrorHandler. */
export function v3ErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof TarsierError) {
    if (err.code === 'internal') request.log.error({ err }, 'request failed');
    return send(reply, BY_ERROR_CODE[err.code], err.message);
  }
  const framework = describeFrameworkError(err);
  if (framework) return send(reply, framework.code, framework.message);
  const unstorable = unstorableValueMessage(err);
  if (unstorable) return send(reply, GRPC.InvalidArgument, unstorable);
  if (isDatabaseUnavailable(err)) {
    request.log.warn({ err }, 'database unavailable');
    return send(reply, GRPC.Unavailable, 'the database is unavailable; retry shortly');
  }
  request.log.error({ err }, 'request failed');
  return send(reply, GRPC.Internal, 'internal server error; the server log has the details');
}

/** The paths the ancestry API owns (no version segment), for choosing this dialect by URL. */
export const ANCESTRY_API_PREFIXES: readonly string[] = ['/ancestry', '/notifications', '/status'];

/** Whether a request URL belongs to the ancestry API (e.g. to pick v3NotFoundHandler for it). */
export function isAncestryApiUrl(url: string): boolean {
  const path = url.split('?', 1)[0] ?? '';
  return ANCESTRY_API_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** An unmatched route under the ancestry API's paths, in this dialect (NotFound). */
export function v3NotFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return send(reply, GRPC.NotFound, `no route for ${request.method} ${request.url.split('?', 1)[0] ?? ''}`);
}

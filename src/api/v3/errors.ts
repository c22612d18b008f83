import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../../errors.js';
import { classifyRequestError } from '../request-errors.js';
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

/** The error handler of the ancestry API's routes; same signature as v1ErrorHandler. */
export function v3ErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const problem = classifyRequestError(err, request.log);
  return send(reply, BY_ERROR_CODE[problem.code], problem.message);
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

import type { ErrorCode } from '../../errors.js';
import type { RequestError } from '../request-errors.js';

/**
 * The one place where ancestry-API errors become grpc-gateway responses: the gRPC status code
 * carried in the body, the HTTP status grpc-gateway derives from it (runtime.HTTPStatusFromCode),
 * and the message twice, as `error` (what Clair's gateway wrote) and `message` (what later gateway
 * versions write), so clients of either kind find it.
 */
export const GRPC = {
  Cancelled: 1,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  Unauthenticated: 16,
} as const;
export type GrpcCode = (typeof GRPC)[keyof typeof GRPC];

const HTTP_STATUS: Readonly<Record<GrpcCode, number>> = {
  [GRPC.Cancelled]: 499,
  [GRPC.InvalidArgument]: 400,
  [GRPC.DeadlineExceeded]: 504,
  [GRPC.NotFound]: 404,
  [GRPC.Unimplemented]: 501,
  [GRPC.Internal]: 500,
  [GRPC.Unavailable]: 503,
  [GRPC.Unauthenticated]: 401,
};

/**
 * Error codes in this dialect: the gRPC code, and for errors of the HTTP edge (which grpc-gateway
 * answered before any gRPC call) the HTTP status the edge chose. A layer that cannot be used (422
 * in v1) is an invalid argument here: gRPC has no "unprocessable", and the client must change the
 * request.
 */
const BY_ERROR_CODE: Readonly<Record<ErrorCode, { grpc: GrpcCode; http?: number }>> = {
  bad_request: { grpc: GRPC.InvalidArgument },
  unprocessable: { grpc: GRPC.InvalidArgument },
  not_found: { grpc: GRPC.NotFound },
  unavailable: { grpc: GRPC.Unavailable },
  unauthenticated: { grpc: GRPC.Unauthenticated },
  internal: { grpc: GRPC.Internal },
  method_not_allowed: { grpc: GRPC.Unimplemented, http: 405 },
  request_timeout: { grpc: GRPC.DeadlineExceeded, http: 408 },
  payload_too_large: { grpc: GRPC.InvalidArgument, http: 413 },
  uri_too_long: { grpc: GRPC.InvalidArgument, http: 414 },
  unsupported_media_type: { grpc: GRPC.InvalidArgument, http: 415 },
  headers_too_large: { grpc: GRPC.InvalidArgument, http: 431 },
  cancelled: { grpc: GRPC.Cancelled },
  not_implemented: { grpc: GRPC.Unimplemented },
};

export interface GrpcErrorBody {
  error: string;
  code: GrpcCode;
  message: string;
}

export function grpcErrorBody(code: GrpcCode, message: string): GrpcErrorBody {
  return { error: message, code, message };
}

/** The gRPC status code of a request error (native gRPC calls get the code and the message). */
export function grpcCodeOf(problem: RequestError): GrpcCode {
  return BY_ERROR_CODE[problem.code].grpc;
}

/** The ancestry API's answer to a request error. */
export function ancestryErrorResponse(problem: RequestError): { status: number; body: GrpcErrorBody } {
  const { grpc, http } = BY_ERROR_CODE[problem.code];
  return { status: http ?? HTTP_STATUS[grpc], body: grpcErrorBody(grpc, problem.message) };
}

/** The paths the ancestry API owns (no version segment), for choosing this dialect by URL. */
export const ANCESTRY_API_PREFIXES: readonly string[] = ['/ancestry', '/notifications', '/status'];

/** Whether a request URL belongs to the ancestry API. */
export function isAncestryApiUrl(url: string): boolean {
  const path = (url.split('?', 1)[0] ?? '').replace(/\/{2,}/g, '/'); // as the router reads it
  return ANCESTRY_API_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

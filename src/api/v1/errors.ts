import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../../errors.js';
import { classifyRequestError } from '../request-errors.js';

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

export function v1ErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const problem = classifyRequestError(err, request.log);
  return send(reply, problem.httpStatus ?? STATUS[problem.code], problem.message);
}

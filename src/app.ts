import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import { createAuthenticator } from './api/auth.js';
import { jsonBodyParser } from './api/json-body.js';
import type { PageTokens } from './api/paging.js';
import { JSON_CONTENT_TYPE, errorBody, v1ErrorHandler } from './api/v1/errors.js';
import { normalizeFieldNames } from './api/v1/schemas.js';
import { registerLayerRoutes } from './api/v1/layers.js';
import { GRPC, grpcErrorBody, isAncestryApiUrl, v3NotFoundHandler } from './api/v3/errors.js';
import { registerAncestryApi } from './api/v3/index.js';
import { registerNotificationRoutes } from './api/v1/notifications.js';
import { ReportCache } from './api/v1/report-cache.js';
import { registerVulnerabilityRoutes } from './api/v1/vulnerabilities.js';
import type { Config } from './config.js';
import type { Indexer } from './indexer/indexer.js';
import type { Metrics } from './metrics.js';
import type { Pool } from './store/pool.js';

export interface AppDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  pageTokens: PageTokens;
  metrics: Metrics;
  indexer: Indexer;
  /** Layer reports kept between requests; a 64 MiB cache unless given. */
  reports?: ReportCache;
  /** Serve HTTPS with this key and certificate; with ca, clients must present a certificate it signed. */
  tls?: { key: Buffer; cert: Buffer; ca?: Buffer };
}

/** Clair read at most 1 MiB of a request body; so do we. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Route pattern for metrics labels: the registered pattern, never the raw URL (unbounded). */
function routeLabel(pattern: string | undefined): string {
  return pattern ?? 'unmatched';
}

/**
 * The API server: v1 routes, the ancestry API, /metrics and /docs. Pure: no listen, no timers, no environment reads.
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const { config, pool, metrics } = deps;
  const app = Fastify({
    ...(deps.tls
      ? {
          https: {
            key: deps.tls.key,
            cert: deps.tls.cert,
            ...(deps.tls.ca ? { ca: deps.tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
            minVersion: 'TLSv1.2' as const,
          },
        }
      : {}),
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { ignoreTrailingSlash: true },
    // Types are checked, never coerced: {"Name": 1} is a client error, as it was in Clair.
    ajv: { customOptions: { coerceTypes: false, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Clair decoded every body as JSON whatever its Content-Type (curl -d sends a form type).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, jsonBodyParser(normalizeFieldNames));

  const authenticate = createAuthenticator(config.api.auth);
  if (authenticate) {
    app.addHook('onRequest', async (request) => authenticate(request.headers.authorization));
  }

  // api.timeout, as Clair's TimeoutHandler: a request still unanswered after it gets a 503.
  app.addHook('onRequest', async (request, reply) => {
    const timer = setTimeout(() => {
      if (reply.sent) return;
      request.log.warn({ timeoutMs: config.api.timeoutMs }, 'request timed out');
      const message = 'the server did not finish the request within the configured timeout (clair.api.timeout)';
      void reply
        .code(503)
        .type(JSON_CONTENT_TYPE)
        .send(isAncestryApiUrl(request.url) ? grpcErrorBody(GRPC.Unavailable, message) : errorBody(message));
    }, config.api.timeoutMs);
    reply.raw.once('close', () => clearTimeout(timer));
  });

  app.addHook('preSerialization', async (_request, reply, payload) => {
    reply.type(JSON_CONTENT_TYPE);
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = routeLabel(request.routeOptions.url);
    metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });

  // OpenAPI description of every route (from the routes' own schemas) at /docs (UI) and /docs/json.
  void app.register(swagger, {
    openapi: {
      info: {
        title: 'Tarsier',
        description: "Container-image vulnerability scanner: Clair's v1 layer API (revisions A and B) and its ancestry API.",
        version: '1',
      },
    },
  });
  void app.register(swaggerUi, { routePrefix: '/docs' });

  app.setErrorHandler(v1ErrorHandler);
  app.setNotFoundHandler((request, reply) =>
    isAncestryApiUrl(request.url)
      ? v3NotFoundHandler(request, reply)
      : reply.code(404).type(JSON_CONTENT_TYPE).send(errorBody(`no route for ${request.method} ${request.url.split('?')[0]}`)),
  );

  // Routes are registered in a plugin, so they come after the OpenAPI plugin has loaded and are
  // described by it; the error handlers, parsers and hooks above apply to them unchanged.
  void app.register(async (scope) => {
    const routes = scope.withTypeProvider<TypeBoxTypeProvider>();
    routes.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    );
    const defaultRevision = config.api.v1Revision;
    registerVulnerabilityRoutes(routes, { pool, pageTokens: deps.pageTokens, defaultRevision });
    registerLayerRoutes(routes, { pool, indexer: deps.indexer, defaultRevision, reports: deps.reports ?? new ReportCache() });
    registerNotificationRoutes(routes, { pool, pageTokens: deps.pageTokens, defaultRevision });
    registerAncestryApi(routes, { pool, indexer: deps.indexer, pageTokens: deps.pageTokens, config });
  });
  return app;
}

/** Health port: GET /health answers 200 when the database answers, 503 when it does not. */
export function buildHealthApp(deps: { pool: Pool; log: Logger }): FastifyInstance {
  // Health probes arrive every few seconds: log their warnings, not every request.
  const level = deps.log.levelVal > deps.log.levels.values.warn! ? deps.log.level : 'warn';
  const app = Fastify({ loggerInstance: deps.log.child({ component: 'health' }, { level }) as FastifyBaseLogger });
  app.get('/health', async (request, reply) => {
    try {
      await deps.pool.query('SELECT 1');
      return reply.send({ status: 'ok' });
    } catch (err) {
      request.log.warn({ err }, 'health check failed');
      return reply.code(503).send({ status: 'unavailable', message: 'the database does not answer' });
    }
  });
  return app;
}

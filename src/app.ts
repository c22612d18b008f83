import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type * as grpc from '@grpc/grpc-js';
import { createAuthenticator } from './api/auth.js';
import { Edge, requestIdOf, ROUTER_OPTIONS, RouteTable } from './api/edge.js';
import { jsonBodyParser } from './api/json-body.js';
import { registerMetricsRoutes } from './api/metrics-routes.js';
import { SHARED_PORT_ALPN, shareWithGrpc } from './api/listener.js';
import { BODY_LIMIT_BYTES } from './api/limits.js';
import type { PageTokens } from './api/paging.js';
import { openApiDocument } from './api/openapi.js';
import { API_TIMEOUT_ERROR } from './api/request-errors.js';
import { compileValidator, validationMessage } from './api/validation.js';
import { JSON_CONTENT_TYPE } from './api/v1/errors.js';
import { registerV1Api } from './api/v1/index.js';
import { normalizeFieldNames } from './api/v1/schemas.js';
import { registerAncestryApi } from './api/v3/index.js';
import type { RouteApp } from './api/route-app.js';
import type { Config } from './config.js';
import type { AncestryService } from './indexer/ancestry-service.js';
import type { Indexer } from './indexer/indexer.js';
import { registerTarsierApi } from './api/tarsier/index.js';
import { registerHarborApi } from './api/harbor/index.js';
import { isUiUrl } from './api/ui/errors.js';
import { registerUi } from './api/ui/index.js';
import type { Metrics } from './metrics.js';
import { LayerReports } from './reports/layer-reports.js';
import { ReportCache } from './reports/report-cache.js';
import type { Pool } from './store/pool.js';
import { ancestryService, imageServices, type ImageServices } from './services.js';
import { ReportChanges } from './store/report-changes.js';

/** Serve HTTPS with this key and certificate; with ca, clients must present a certificate it signed. */
export interface ApiTls {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly ca?: Buffer;
}

export interface AppDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  pageTokens: PageTokens;
  metrics: Metrics;
  indexer: Indexer;
  /** Layer reports kept between requests (kept current by the database's change notifications); made here unless given. */
  reports?: ReportCache;
  /** The ancestry API's operations, shared with the gRPC transport; made here unless given. */
  ancestry?: AncestryService;
  tls?: ApiTls | undefined;
  /**
   * Image scans from registries and their queue; made here unless given. Whoever owns the process
   * starts the queue's workers (startServer); scans are queued either way. Closing the app stops them.
   */
  images?: ImageServices;
  /** A gRPC server to share the API port with (src/api/listener.ts); on close its calls get drainMs to finish. */
  grpc?: { server: grpc.Server; drainMs: number };
}

/**
 * How long a write's answer waits for its change to be heard by this replica's report cache (it is
 * normally a matter of milliseconds); past it, the cache is dropped whole.
 */
const CATCH_UP_TIMEOUT_MS = 2_000;

/**
 * One log line per request, once answered, instead of Fastify's two (incoming, completed): a cached
 * report is answered in tens of microseconds, and each line costs a few.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/** Route pattern for metrics labels: the registered pattern, never the raw URL (unbounded). */
function routeLabel(pattern: string | undefined): string {
  return pattern ?? 'unmatched';
}

/**
 * The API server: v1 routes, the ancestry API, /metrics and /docs. No listen and no environment
 * reads; once ready it listens for the database's report changes (on a connection of its own,
 * made with the pool's settings) until closed.
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const { config, pool, metrics } = deps;
  const routes = new RouteTable();
  const edge = new Edge({ metrics, log: deps.log, routes });
  // Fastify turns Node's request timeouts off; without a header deadline a client sending headers
  // byte by byte holds its connection for ever. Node checks deadlines every connectionsCheckingInterval.
  // Under TLS the handshake has the same deadline (Node's own is 120 s).
  const headerDeadline = {
    headersTimeout: config.api.headerTimeoutMs,
    // No whole-request limit (Fastify sets none either, once the server exists): bodies have their
    // own deadlines. Node's constructor default (300 s) refused a header deadline above it.
    requestTimeout: 0,
    connectionsCheckingInterval: Math.min(30_000, Math.ceil(config.api.headerTimeoutMs / 2)),
  };
  const tls = deps.tls;
  const app = Fastify({
    ...(tls
      ? {
          https: {
            key: tls.key,
            cert: tls.cert,
            ...(tls.ca ? { ca: tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
            minVersion: 'TLSv1.2' as const,
            ALPNProtocols: deps.grpc ? SHARED_PORT_ALPN : ['http/1.1'],
            handshakeTimeout: config.api.headerTimeoutMs,
            ...headerDeadline,
          },
        }
      : { http: headerDeadline }),
    loggerInstance: deps.log as FastifyBaseLogger,
    logController: new OneLinePerRequest(),
    // Between requests; HTTP/2 connections without a call have the same limit (src/api/grpc.ts).
    keepAliveTimeout: config.api.idleTimeoutMs,
    bodyLimit: BODY_LIMIT_BYTES,
    // Names in paths up to MAX_NAME_LENGTH (Fastify's default of 100 refused klar's and Quay's).
    routerOptions: { ...ROUTER_OPTIONS },
    genReqId: (request) => requestIdOf(request.headers['x-request-id']),
    schemaErrorFormatter: (errors, part) => new Error(validationMessage(errors, part)),
    frameworkErrors: edge.onFrameworkError,
    clientErrorHandler: edge.onClientError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  if (deps.grpc) {
    const { drainMs } = deps.grpc;
    const shared = shareWithGrpc(app.server, deps.grpc.server, { prefaceTimeoutMs: config.api.headerTimeoutMs });
    // Closing waits for every connection the port accepted, gRPC ones too: ask those to go first.
    app.addHook('preClose', (done) => {
      shared.close(drainMs);
      done();
    });
  }

  const reports = deps.reports ?? new ReportCache();
  const reportChanges = new ReportChanges({
    pool,
    connection: pool.options,
    log: deps.log.child({ component: 'report-cache' }),
    events: reports,
  });
  app.addHook('onReady', () => reportChanges.start());
  app.addHook('onClose', () => reportChanges.stop());

  const images = deps.images ?? imageServices({ pool, indexer: deps.indexer, config, log: deps.log, metrics });
  metrics.imageQueueDepth = () => images.queue.depth();
  app.addHook('onClose', async () => {
    await images.queue.stop();
    // After the queue: this process's Harbor scans go to other processes only once it runs none.
    await images.harbor.close();
  });

  app.setValidatorCompiler(compileValidator);
  app.setErrorHandler(edge.onError);
  app.setNotFoundHandler(edge.onNotFound);
  app.addHook('onRoute', (route) => routes.add(route.method, route.url));

  // Clair decoded every body as JSON whatever its Content-Type (curl -d sends a form type).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', jsonBodyParser({ deadlineMs: config.api.bodyTimeoutMs }, normalizeFieldNames));

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  const authenticator = createAuthenticator(config.api.auth);
  if (authenticator) {
    app.addHook('onRequest', async (request) => {
      // Registry webhooks carry their own shared secret in Authorization (src/api/tarsier/webhooks.ts);
      // the dashboard has sessions of its own, opened with the same credentials (src/api/ui/index.ts).
      if ((request.routeOptions.config as { webhook?: boolean } | undefined)?.webhook || isUiUrl(request.url)) return;
      await authenticator.authenticate(request.headers.authorization);
    });
  }

  // api.timeout, as Clair's TimeoutHandler: a request still unanswered after it gets a 503.
  app.addHook('onRequest', async (request, reply) => {
    const timer = setTimeout(() => {
      if (reply.sent) return;
      request.log.warn({ timeoutMs: config.api.timeoutMs }, 'request timed out');
      edge.send(request, reply, API_TIMEOUT_ERROR);
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
  void app.register(swagger, { openapi: openApiDocument(config) });
  void app.register(swaggerUi, { routePrefix: '/docs' });

  // Routes are registered in a plugin, so they come after the OpenAPI plugin has loaded and are
  // described by it; the error handlers, parsers and hooks above apply to them unchanged.
  void app.register(async (plugin) => {
    const scope: RouteApp = plugin.withTypeProvider<TypeBoxTypeProvider>();
    registerMetricsRoutes(scope, metrics);
    const { indexer, pageTokens } = deps;
    registerV1Api(scope, {
      pool,
      indexer,
      pageTokens,
      defaultRevision: config.api.v1Revision,
      reports: new LayerReports(pool, reports),
      caughtUp: () => reportChanges.caughtUp(CATCH_UP_TIMEOUT_MS),
    });
    registerAncestryApi(scope, { service: deps.ancestry ?? ancestryService({ pool, scans: images.scans }), pageTokens, config });
    registerTarsierApi(scope, {
      pool,
      scanner: images.scanner,
      queue: images.queue,
      scans: images.scans,
      pageTokens,
      bodyTimeoutMs: config.api.bodyTimeoutMs,
      webhookSecret: config.webhooks.secret,
      maxDataAgeMs: config.updater.maxDataAgeMs,
    });
    registerHarborApi(scope, { pool, scanner: images.scanner, scans: images.harbor, bodyTimeoutMs: config.api.bodyTimeoutMs });
    // Its own scope: the sign-in form's body parser applies to the dashboard's routes only.
    void plugin.register(async (ui) =>
      registerUi(ui.withTypeProvider<TypeBoxTypeProvider>(), {
        pool,
        pageTokens,
        authenticator,
        sessionIdleMs: config.api.auth.sessionIdleMs,
        sessionLifetimeMs: config.api.auth.sessionLifetimeMs,
        secure: tls !== undefined,
        enabledSources: config.updater.enabledUpdaters,
        maxDataAgeMs: config.updater.maxDataAgeMs,
        bodyTimeoutMs: config.api.bodyTimeoutMs,
      }),
    );
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

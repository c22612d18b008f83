import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { Logger } from 'pino';
import { whenDone } from './when-done.js';
import { PageTokens } from '../../src/api/paging.js';
import type { ReportCache } from '../../src/reports/report-cache.js';
import { buildGrpcServer } from '../../src/api/grpc.js';
import { buildApp } from '../../src/app.js';
import { ancestryService, imageServices, type ImageServices } from '../../src/services.js';
import { parseConfig, type Config } from '../../src/config.js';
import { Indexer } from '../../src/indexer/indexer.js';
import { indexerSettings } from '../../src/settings.js';
import { Metrics } from '../../src/metrics.js';
import { freshPool, silentLog } from './db.js';

export interface TestApp {
  app: FastifyInstance;
  pool: pg.Pool;
  config: Config;
  pageTokens: PageTokens;
  metrics: Metrics;
  images: ImageServices;
}

/**
 * buildApp over a fresh database. yaml: extra configuration under `clair:` (indented two
 * spaces), e.g. "  api:\n    v1revision: A". now: the page-token clock (Unix ms). routes: extra
 * routes registered before the app is ready (e.g. a deliberately slow one). reports: the layer
 * report cache (e.g. a small one). log: where the app logs (silent unless given). grpc: the ancestry
 * services over gRPC too, on the app's port (as the server runs them).
 */
export async function testApp(
  options: {
    yaml?: string;
    pool?: pg.Pool;
    now?: () => number;
    routes?: (app: FastifyInstance) => void;
    reports?: ReportCache;
    log?: Logger;
    /** With drainMs: how long calls under way get once the app closes (1 s unless given). */
    grpc?: boolean | { drainMs: number };
    /** Run the image scan queue's workers (as the server does). */
    imageQueue?: boolean;
  } = {},
): Promise<TestApp> {
  const pool = options.pool ?? (await freshPool());
  const config = parseConfig(options.yaml ? `clair:\n${options.yaml}\n` : '');
  const pageTokens = new PageTokens(randomBytes(32), options.now);
  const metrics = new Metrics();
  const log = options.log ?? silentLog;
  const indexer = new Indexer({ pool, settings: indexerSettings(config), log, metrics });
  const images = imageServices({ pool, indexer, config, log, metrics });
  const ancestry = ancestryService({ pool, scans: images.scans });
  const grpc = options.grpc ? buildGrpcServer({ service: ancestry, pageTokens, log, metrics, api: config.api }) : undefined;
  const app = buildApp({
    config,
    pool,
    log,
    pageTokens,
    metrics,
    indexer,
    ancestry,
    images,
    reports: options.reports,
    ...(grpc ? { grpc: { server: grpc.server, drainMs: typeof options.grpc === 'object' ? options.grpc.drainMs : 1_000 } } : {}),
  });
  options.routes?.(app);
  await app.ready();
  if (options.imageQueue) await images.queue.start();
  whenDone(async () => {
    await app.close();
    grpc?.server.forceShutdown();
  });
  return { app, pool, config, pageTokens, metrics, images };
}

/** JSON body of an inject() response. */
export function json(response: { body: string }): any {
  return JSON.parse(response.body);
}

import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Indexer } from '../../indexer/indexer.js';
import { LayerScans } from '../../indexer/layer-scans.js';
import type { Pool } from '../../store/pool.js';
import type { PageTokens } from '../paging.js';
import { registerAncestryRoutes } from './ancestry.js';
import { jsonBodyParser } from '../json-body.js';
import { v3ErrorHandler } from './errors.js';
import { registerNotificationRoutes } from './notifications.js';
import { registerStatusRoutes } from './status.js';

export interface AncestryApiDeps {
  pool: Pool;
  /** Downloads and reads layers (its scan()). */
  indexer: Pick<Indexer, 'scan'>;
  pageTokens: PageTokens;
  config: Config;
}

/**
 * The ancestry API (Clair v3's grpc-gateway JSON): POST /ancestry, GET /ancestry/{name},
 * GET and DELETE /notifications/{name}, GET /status. Registered in an encapsulated plugin that has
 * its own error handler (the grpc-gateway error dialect) and its own body parser (plain JSON:
 * none of the v1 API's field-name normalisation), so the v1 routes are not affected.
 */
export function registerAncestryApi(app: FastifyInstance<any, any, any, any, any>, deps: AncestryApiDeps): void { // eslint-disable-line @typescript-eslint/no-explicit-any
  const scans = new LayerScans({
    pool: deps.pool,
    indexer: deps.indexer,
    log: app.log.child({ component: 'layer-scans' }),
    downloadTimeoutMs: deps.config.indexer.downloadTimeoutMs,
  });
  void app.register(async (scope) => {
    scope.setErrorHandler(v3ErrorHandler);
    // As the v1 API: any Content-Type is read as JSON (grpc-gateway's marshaler did the same).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, jsonBodyParser());
    registerAncestryRoutes(scope, { pool: deps.pool, scans });
    registerNotificationRoutes(scope, { pool: deps.pool, pageTokens: deps.pageTokens });
    registerStatusRoutes(scope, { pool: deps.pool });
  });
}

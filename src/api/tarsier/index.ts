import type { ImageScanner } from '../../images/images.js';
import { ImageInventory } from '../../images/inventory.js';
import type { ImageQueue } from '../../images/queue.js';
import type { LayerScans } from '../../indexer/layer-scans.js';
import type { Pool } from '../../store/pool.js';
import { jsonBodyParser } from '../json-body.js';
import type { PageTokens } from '../paging.js';
import type { RouteApp } from '../route-app.js';
import { ErrorBody } from '../v1/schemas.js';
import { registerImageRoutes } from './images.js';
import { registerLayerUploadRoutes } from './layers.js';
import { registerSbomRoutes } from './sboms.js';
import { registerImageNotificationRoutes } from './notifications.js';
import { registerWebhookRoutes } from './webhooks.js';

export interface TarsierApiDeps {
  pool: Pool;
  scanner: ImageScanner;
  queue: ImageQueue;
  scans: LayerScans;
  pageTokens: PageTokens;
  bodyTimeoutMs: number;
  webhookSecret: string;
  /** Data older than this is reported stale (updater.maxdataage); 0: never. */
  maxDataAgeMs: number;
}

/**
 * Tarsier's own API under /tarsier/v1: images, layer uploads, registry webhooks. JSON
 * bodies are read as sent (none of the v1 API's field-name normalisation: registries' events have
 * fields such as `name` and `authorization` that must stay as they are); errors take the v1
 * envelope (src/api/edge.ts, by URL). Layer uploads live in a scope of their own, whose body is
 * the raw stream, and so do SBOMs, whose body is kept as the bytes sent.
 */
export function registerTarsierApi(app: RouteApp, deps: TarsierApiDeps): void {
  const errors = (scope: RouteApp) =>
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, response: { ...(route.schema?.response as object), '4xx': ErrorBody, '5xx': ErrorBody } };
    });
  const inventory = new ImageInventory({ pool: deps.pool, maxDataAgeMs: deps.maxDataAgeMs });
  void app.register(async (scope) => {
    errors(scope);
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', jsonBodyParser({ deadlineMs: deps.bodyTimeoutMs }));
    registerImageRoutes(scope, { ...deps, inventory });
    registerImageNotificationRoutes(scope, { ...deps, inventory });
    registerWebhookRoutes(scope, { pool: deps.pool, queue: deps.queue, secret: deps.webhookSecret });
  });
  void app.register(async (scope) => {
    errors(scope);
    registerLayerUploadRoutes(scope, { scans: deps.scans });
  });
  void app.register(async (scope) => {
    errors(scope);
    registerSbomRoutes(scope, { pool: deps.pool, inventory, bodyTimeoutMs: deps.bodyTimeoutMs });
  });
}

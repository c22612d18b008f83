import type { RouteApp } from '../route-app.js';
import type { Config } from '../../config.js';
import type { AncestryService } from '../../indexer/ancestry-service.js';
import type { PageTokens } from '../paging.js';
import { registerAncestryRoutes } from './ancestry.js';
import { jsonBodyParser } from '../json-body.js';
import { registerNotificationRoutes } from './notifications.js';
import { GrpcErrorBody } from './schemas.js';
import { AncestryOperations } from './operations.js';
import { registerStatusRoutes } from './status.js';

export interface AncestryApiDeps {
  service: AncestryService;
  pageTokens: PageTokens;
  config: Config;
}

/**
 * The ancestry API (Clair v3's grpc-gateway JSON): POST /ancestry, GET /ancestry/{name},
 * GET and DELETE /notifications/{name}, GET /status. Registered in an encapsulated plugin that has
 * its own body parser (plain JSON: none of the v1 API's field-name normalisation), so the v1
 * routes are not affected; errors take the grpc-gateway shape by URL (src/api/edge.ts).
 */
export function registerAncestryApi(app: RouteApp, deps: AncestryApiDeps): void {
  void app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, response: { ...(route.schema?.response as object), '4xx': GrpcErrorBody, '5xx': GrpcErrorBody } };
    });
    // As the v1 API: any Content-Type is read as JSON (grpc-gateway's marshaler did the same).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', jsonBodyParser({ deadlineMs: deps.config.api.bodyTimeoutMs }));
    const operations = new AncestryOperations(deps.service, deps.pageTokens);
    registerAncestryRoutes(scope, operations);
    registerNotificationRoutes(scope, operations);
    registerStatusRoutes(scope, operations);
  });
}

import type { Indexer } from '../../indexer/indexer.js';
import type { LayerReports } from '../../reports/layer-reports.js';
import type { Pool } from '../../store/pool.js';
import type { PageTokens } from '../paging.js';
import type { RouteApp } from '../route-app.js';
import { registerLayerRoutes } from './layers.js';
import { registerNotificationRoutes } from './notifications.js';
import { ErrorBody, RevisionHeaders } from './schemas.js';
import type { Revision } from './serialize.js';
import { registerVulnerabilityRoutes } from './vulnerabilities.js';

export interface V1ApiDeps {
  pool: Pool;
  indexer: Indexer;
  pageTokens: PageTokens;
  defaultRevision: Revision;
  reports: LayerReports;
  /** Resolves once this replica has heard of every change committed so far (its report cache is current). */
  caughtUp(): Promise<void>;
}

/**
 * The v1 layer API (Clair v2): layers, the vulnerability database, notifications. Every route
 * reads X-Clair-Api-Revision (validated with the rest of the request, before any work) and answers
 * errors as {"Error":{"Message"}}; both are declared here once for all of them.
 */
export function registerV1Api(app: RouteApp, deps: V1ApiDeps): void {
  void app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.schema = {
        ...route.schema,
        headers: RevisionHeaders,
        response: { ...(route.schema?.response as object), '4xx': ErrorBody, '5xx': ErrorBody },
      };
    });
    // A client that writes, then reads a report, sees its write: a write's answer waits until the
    // report cache has dropped what the write made stale. Reads carry no such hook.
    scope.addHook('onRoute', (route) => {
      const methods = [route.method].flat();
      if (methods.every((m) => m === 'GET' || m === 'HEAD')) return;
      const waitForOwnChange = async (_request: unknown, reply: { statusCode: number }) => {
        if (reply.statusCode < 400) await deps.caughtUp();
      };
      route.onSend = [...[route.onSend ?? []].flat(), waitForOwnChange];
    });
    const { pool, pageTokens, defaultRevision } = deps;
    registerVulnerabilityRoutes(scope, { pool, pageTokens, defaultRevision });
    registerLayerRoutes(scope, { pool, indexer: deps.indexer, defaultRevision, reports: deps.reports });
    registerNotificationRoutes(scope, { pool, pageTokens, defaultRevision });
  });
}

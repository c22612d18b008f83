import { Type } from '@sinclair/typebox';
import type { Metrics } from '../metrics.js';
import type { RouteApp } from './route-app.js';
import { ErrorBody } from './v1/schemas.js';

/**
 * /metrics, the Prometheus text exposition of this process; also at /v1/metrics, where Clair v2
 * served it and where Quay pings to check the scanner is up. Errors take the v1 envelope (by URL,
 * src/api/edge.ts).
 */
export function registerMetricsRoutes(app: RouteApp, metrics: Metrics): void {
  for (const [url, operationId] of [
    ['/metrics', 'metrics'],
    ['/v1/metrics', 'v1Metrics'],
  ] as const) {
    app.get(
      url,
      {
        schema: {
          tags: ['metrics'],
          operationId,
          summary: url === '/metrics' ? 'Prometheus metrics' : "Prometheus metrics at Clair v2's address",
          description: 'Requests, errors, indexing, updater runs, notifier deliveries, the image queue and process metrics.',
          response: {
            200: {
              description: 'The Prometheus text exposition format.',
              content: { [metrics.registry.contentType]: { schema: Type.String() } },
            },
            '4xx': ErrorBody,
            '5xx': ErrorBody,
          },
        },
      },
      async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    );
  }
}

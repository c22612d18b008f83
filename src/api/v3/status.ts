import type { RouteApp } from '../route-app.js';
import { GetStatusResponse } from './schemas.js';
import type { AncestryOperations } from './operations.js';

/** GET /status: StatusService over grpc-gateway's JSON mapping. */
export function registerStatusRoutes(app: RouteApp, operations: AncestryOperations): void {
  app.get(
    '/status',
    {
      schema: {
        operationId: 'getStatus',
        summary: 'The listers and detectors layers are scanned with, and the last vulnerability update (StatusService.GetStatus)',
        tags: ['status'],
        response: { 200: GetStatusResponse },
      },
    },
    async () => operations.getStatus(),
  );
}

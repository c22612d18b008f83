import { whileClientWaits } from '../edge.js';
import type { RouteApp } from '../route-app.js';
import { AncestryParams, AncestryQuery, GetAncestryResponse, PostAncestryRequest, PostAncestryResponse } from './schemas.js';
import { parsePostAncestry, type AncestryOperations } from './operations.js';

/** POST /ancestry and GET /ancestry/{ancestry_name}: AncestryService over grpc-gateway's JSON mapping. */
export function registerAncestryRoutes(app: RouteApp, operations: AncestryOperations): void {
  const tags = ['ancestry'];

  app.post(
    '/ancestry',
    {
      schema: {
        operationId: 'postAncestry',
        summary: 'Scan an image: its layers, parent first (AncestryService.PostAncestry)',
        description: 'Answers when every layer is scanned and the ancestry stored. A layer hash already scanned is not downloaded again.',
        tags,
        body: PostAncestryRequest,
        response: { 200: PostAncestryResponse },
      },
    },
    async (request, reply) => operations.postAncestry(parsePostAncestry(request.body), whileClientWaits(reply)),
  );

  app.get(
    '/ancestry/:ancestry_name',
    {
      schema: {
        operationId: 'getAncestry',
        summary: "An ancestry's layers, the features each introduced and their vulnerabilities (AncestryService.GetAncestry)",
        tags,
        params: AncestryParams,
        querystring: AncestryQuery,
        response: { 200: GetAncestryResponse },
      },
    },
    async (request) => operations.getAncestry(request.params.ancestry_name),
  );
}

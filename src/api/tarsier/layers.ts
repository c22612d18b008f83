import { INDEXER_VERSION } from '../../ecosystems/index.js';
import type { LayerScans } from '../../indexer/layer-scans.js';
import { whileClientWaits } from '../edge.js';
import type { RouteApp } from '../route-app.js';
import { ErrorBody } from '../v1/schemas.js';
import { DigestParams, UploadedLayer } from './schemas.js';

export interface LayerRouteDeps {
  scans: LayerScans;
}

const TAGS = ['layers'];

/**
 * Layer uploads: how a client that holds the layers (the CI scanner) gets them indexed when the
 * server cannot reach them. HEAD says whether the current indexer already scanned the digest; PUT
 * streams the compressed layer into the indexer (no temporary copy), verifies the digest over the
 * whole body (400 on a mismatch, nothing stored) and stores its scan under the digest, where
 * images and ancestries (POST /ancestry without paths) find it.
 */
export function registerLayerUploadRoutes(app: RouteApp, deps: LayerRouteDeps): void {
  const { scans } = deps;
  const scanned = (digest: string): Promise<boolean> => scans.isScanned(digest);

  // The body is the layer itself: read as a stream by the route, never parsed or buffered.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  app.head(
    '/tarsier/v1/layers/:digest',
    {
      // @fastify/swagger leaves HEAD routes out unless asked: this one has no GET beside it to stand for it.
      config: { swagger: { exposeHeadRoute: true } },
      schema: {
        tags: TAGS,
        operationId: 'layerScanned',
        summary: 'Whether a layer is scanned',
        description: '200 when the current indexer has scanned the layer with this digest, else 404 (upload it with PUT).',
        params: DigestParams,
        // Declared here: @fastify/swagger copies a HEAD route's schema before this scope adds its error answers.
        response: {
          200: { description: 'The current indexer has scanned the layer.', type: 'null' },
          404: { description: 'The layer is not scanned, or not by the current indexer: upload it with PUT.', type: 'null' },
          '4xx': ErrorBody,
          '5xx': ErrorBody,
        },
      },
    },
    async (request, reply) => reply.code((await scanned(request.params.digest)) ? 200 : 404).send(),
  );

  app.put(
    '/tarsier/v1/layers/:digest',
    {
      schema: {
        tags: TAGS,
        operationId: 'uploadLayer',
        summary: 'Upload a layer',
        description:
          'The body is the compressed layer blob (as in a docker save or OCI archive). It is scanned as it arrives, and its digest ' +
          'checked over the whole body: a mismatch is a 400 and nothing is stored. 201 when scanned now, 200 when it already was ' +
          '(the body is then not read). An upload may take long, but one that sends nothing for clair.api.uploadidletimeout is a 408.',
        params: DigestParams,
        response: { 200: UploadedLayer, 201: UploadedLayer },
      },
    },
    async (request, reply) => {
      const { digest } = request.params;
      const known = await scanned(digest);
      const layer = await scans.scan(
        { hash: digest, path: `upload ${digest}`, headers: {}, format: 'docker', digest, body: request.raw },
        whileClientWaits(reply),
      );
      // Not read: the connection cannot carry another request after an unread body.
      if (known) reply.header('connection', 'close');
      return reply.code(known ? 200 : 201).send({
        Layer: {
          Digest: digest,
          ...(layer.scan.namespace ? { NamespaceName: layer.scan.namespace } : {}),
          IndexedByVersion: INDEXER_VERSION,
        },
      });
    },
  );
}

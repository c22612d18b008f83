import type { FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, notFound } from '../../errors.js';
import { layerFormatNamed, type LayerFormat } from '../../indexer/archive.js';
import type { Indexer } from '../../indexer/indexer.js';
import { deleteLayer } from '../../store/layers.js';
import { withTransaction, type Pool } from '../../store/pool.js';
import { whileClientWaits } from '../edge.js';
import { JSON_CONTENT_TYPE } from './errors.js';
import type { LayerReports } from '../../reports/layer-reports.js';
import type { CachedReport } from '../../reports/report-cache.js';
import { reportFormat } from './report-format.js';
import { flag, revisionOf } from './request.js';
import { Empty, LayerEnvelope, LayerParams, LayerQuery, LayerReport, PostedLayer, type LayerInput } from './schemas.js';
import type { Revision } from './serialize.js';
import type { RouteApp } from '../route-app.js';

export interface LayerRouteDeps {
  pool: Pool;
  indexer: Indexer;
  defaultRevision: Revision;
  reports: LayerReports;
}

/** Format names accepted on input (case-insensitive); OCI layers are Docker layers. */

function required(value: string | undefined, field: string): string {
  if (value === undefined || value.trim() === '') throw badRequest(`Layer.${field} is required`);
  return value;
}

function layerFormat(input: string): LayerFormat {
  const format = layerFormatNamed(input);
  if (!format) throw badRequest(`Layer.Format ${JSON.stringify(input)} is not supported: use Docker (or OCI) or ACI`);
  return format;
}

/**
 * The download's headers: Headers (the shape Clair clients send) and Authorization (revision B's
 * field), which wins for its own header.
 */
function downloadHeaders(input: LayerInput): Record<string, string> {
  const headers: Record<string, string> = { ...(input.Headers ?? {}) };
  if (input.Authorization) {
    for (const key of Object.keys(headers)) if (key.toLowerCase() === 'authorization') delete headers[key];
    headers.Authorization = input.Authorization;
  }
  return headers;
}

/** Reports worth compressing: a small one costs more to gzip than it saves. */
const GZIP_MIN_BYTES = 1024;

/** Sends a report, gzip-compressed when the client accepts it (as Clair did). */
async function sendReport(request: FastifyRequest, reply: FastifyReply, reports: LayerReports, key: string, report: CachedReport) {
  reply.type(JSON_CONTENT_TYPE).header('vary', 'Accept-Encoding');
  if (report.body.length < GZIP_MIN_BYTES || !/\bgzip\b/i.test(String(request.headers['accept-encoding'] ?? ''))) {
    return reply.send(report.body);
  }
  return reply.header('content-encoding', 'gzip').send(await reports.gzip(key, report));
}

export function registerLayerRoutes(app: RouteApp, deps: LayerRouteDeps): void {
  const { pool, indexer } = deps;
  const revision = (request: FastifyRequest): Revision => revisionOf(request, deps.defaultRevision);

  app.post(
    '/v1/layers',
    {
      schema: {
        operationId: 'postLayer',
        summary: 'Index a layer',
        description:
          'Downloads the layer from Path, reads its packages and stores them; answers when done. A layer already ' +
          'indexed by the current indexer version is not downloaded again. The parent must be indexed first.',
        tags: ['v1 layers'],
        body: LayerEnvelope,
        response: { 201: PostedLayer },
      },
    },
    async (request, reply) => {
      const input = request.body.Layer;
      const layer = await indexer.index(
        {
          name: required(input.Name, 'Name'),
          path: required(input.Path, 'Path'),
          format: layerFormat(required(input.Format, 'Format')),
          parentName: input.ParentName || undefined,
          headers: downloadHeaders(input),
        },
        whileClientWaits(reply),
      );
      // As Clair: the submitted fields, plus the version of the indexer that indexed the layer.
      return reply.code(201).send({ Layer: { ...input, IndexedByVersion: layer.indexedByVersion } });
    },
  );

  app.get(
    '/v1/layers/:name',
    {
      schema: {
        operationId: 'getLayer',
        summary: 'A layer, its packages and their vulnerabilities',
        description: 'Gzip-compressed for clients that send Accept-Encoding: gzip.',
        tags: ['v1 layers'],
        params: LayerParams,
        querystring: LayerQuery,
        response: { 200: LayerReport },
      },
    },
    async (request, reply) => {
      const withVulnerabilities = flag(request.query.vulnerabilities);
      const view = {
        revision: revision(request),
        features: withVulnerabilities || flag(request.query.features),
        vulnerabilities: withVulnerabilities,
      };
      const built = await deps.reports.report(request.params.name, reportFormat(view));
      if (!built) throw notFound(`layer ${request.params.name} does not exist`);
      return sendReport(request, reply, deps.reports, built.key, built.report);
    },
  );

  app.delete(
    '/v1/layers/:name',
    {
      schema: {
        operationId: 'deleteLayer',
        summary: 'Delete a layer and all its descendants',
        tags: ['v1 layers'],
        params: LayerParams,
        response: { 200: Empty },
      },
    },
    async (request, reply) => {
      const deleted = await withTransaction(pool, (client) => deleteLayer(client, request.params.name));
      if (!deleted) throw notFound(`layer ${request.params.name} does not exist`);
      return reply.code(200).send();
    },
  );
}

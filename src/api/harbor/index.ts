import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { badRequest, notFound, TarsierError, unprocessable } from '../../errors.js';
import { referenceOf, type HarborScans, type HarborScanTarget } from '../../images/harbor-scans.js';
import { checkImageRequest, type ImageScanner } from '../../images/images.js';
import type { Pool } from '../../store/pool.js';
import { jsonBodyParser } from '../json-body.js';
import { MAX_NAME_LENGTH } from '../limits.js';
import type { RouteApp } from '../route-app.js';
import { HARBOR_API_PREFIX } from './errors.js';
import { harborReport, scannerMetadata } from './report.js';
import {
  ErrorResponse,
  HarborVulnerabilityReport,
  MIME_ERROR,
  MIME_METADATA,
  MIME_NATIVE_REPORT_V1_0,
  MIME_SCAN_REQUEST,
  MIME_SCAN_RESPONSE,
  MIME_VULN_REPORT_V1_1,
  REFRESH_AFTER_HEADER,
  REFRESH_AFTER_MAX_SECONDS,
  reportMimeType,
  ScannerAdapterMetadata,
  ScanRequest,
  scanRequestProblem,
  ScanResponse,
  unsupportedCapability,
} from './spec.js';

export interface HarborApiDeps {
  pool: Pool;
  /** Checks what a scan would pull (src/images/images.ts). */
  scanner: Pick<ImageScanner, 'check'>;
  /** Harbor's scans, queued and run by the durable queue (src/images/harbor-scans.ts). */
  scans: HarborScans;
  bodyTimeoutMs: number;
}

const TAGS = ['harbor'];

/**
 * Seconds Harbor waits before asking again for a report still being made. Harbor's own default is
 * 5; most scans of images whose layers Tarsier has seen take a second or two, new ones tens of
 * seconds, so asking every 2 s costs little and gets the report to Harbor soon after it exists.
 */
const REFRESH_AFTER_SECONDS = 2;

const ScanReportParams = Type.Object({
  scan_request_id: Type.String({ maxLength: MAX_NAME_LENGTH, description: 'The id POST /api/v1/scan answered.' }),
});

/** A response documented under its Pluggable Scanner media type(s) instead of application/json. */
const mediaTyped = (description: string, types: readonly string[], schema: TSchema) => ({
  description,
  content: Object.fromEntries(types.map((type) => [type, { schema }])),
});

/**
 * The spec's media types have parameters and, for the report, no "json": Fastify would refuse to
 * serialize an object under them, so answers go out as bytes with the exact Content-Type.
 */
function sendJson(reply: FastifyReply, status: number, type: string, value: unknown): FastifyReply {
  return reply
    .code(status)
    .type(type)
    .send(Buffer.from(JSON.stringify(value)));
}

/**
 * Harbor's Pluggable Scanner API v1.1 (src/api/harbor/spec.ts) at /api/v1: Harbor registers
 * Tarsier as a scanner, posts a scan per artifact and polls for its report. The API's
 * authentication applies (Harbor sends the registration's Authorization header); errors take the
 * spec's envelope and media type (src/api/edge.ts, by URL). Bodies are read as sent: the v1 API's
 * field-name normalisation would rename registry.authorization.
 */
export function registerHarborApi(app: RouteApp, deps: HarborApiDeps): void {
  void app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      const error = mediaTyped('An error, with a message a person can act on.', [MIME_ERROR], ErrorResponse);
      route.schema = { ...route.schema, response: { ...(route.schema?.response as object), '4xx': error, '5xx': error } };
    });
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', jsonBodyParser({ deadlineMs: deps.bodyTimeoutMs }));
    registerRoutes(scope, deps);
  });
}

function registerRoutes(app: RouteApp, { pool, scanner, scans }: HarborApiDeps): void {
  app.get(
    `${HARBOR_API_PREFIX}/metadata`,
    {
      schema: {
        tags: TAGS,
        operationId: 'harborScannerMetadata',
        summary: "The scanner's metadata, for Harbor's scanner registration",
        description:
          'Name, vendor and version; the artifacts scanned (OCI and Docker image manifests) and the report produced (the v1.1 ' +
          'vulnerability report); the date of the vulnerability database (last successful update) and Basic registry authorization.',
        response: { 200: mediaTyped("The scanner adapter's metadata.", [MIME_METADATA], ScannerAdapterMetadata) },
      },
    },
    async (_request, reply) => sendJson(reply, 200, MIME_METADATA, await scannerMetadata(pool)),
  );

  app.post(
    `${HARBOR_API_PREFIX}/scan`,
    {
      attachValidation: true,
      schema: {
        tags: TAGS,
        operationId: 'harborScan',
        summary: 'Scan an artifact of a registry (Harbor)',
        description:
          'Answers 202 with the scan id at once; the scan is queued (it survives a restart) and pulls the image from registry.url ' +
          'with registry.authorization (kept in the memory of this process only, never stored). Poll GET ' +
          '/api/v1/scan/{scan_request_id}/report. 400 when the body is not a JSON object; 422 when a field is missing or invalid, ' +
          'or registry.url is http: while credentials (registry.authorization, or configured ones) would go with it and the ' +
          'configuration does not mark the registry insecure; 501 when enabled_capabilities asks for a capability Tarsier does ' +
          'not declare (sbom).',
        consumes: [MIME_SCAN_REQUEST, 'application/json'],
        body: ScanRequest,
        response: { 202: mediaTyped('The scan is accepted; its id names the report.', [MIME_SCAN_RESPONSE], ScanResponse) },
      },
    },
    async (request, reply) => {
      const body: unknown = request.body;
      if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw badRequest('request body must be a ScanRequest: a JSON object with registry and artifact');
      }
      // A JSON object whose fields are wrong is "invalid field" in the spec's words: 422, as for a missing one.
      if (request.validationError) throw unprocessable(request.validationError.message);
      const unsupported = unsupportedCapability(request.body);
      if (unsupported) throw new TarsierError('not_implemented', unsupported);
      const id = await scans.start(scanTarget(request.body, scanner));
      request.log.info(
        { scan: id, repository: request.body.artifact.repository, digest: request.body.artifact.digest },
        'harbor scan accepted',
      );
      return sendJson(reply, 202, MIME_SCAN_RESPONSE, { id });
    },
  );

  app.get(
    `${HARBOR_API_PREFIX}/scan/:scan_request_id/report`,
    {
      schema: {
        tags: TAGS,
        operationId: 'harborScanReport',
        summary: "A Harbor scan's vulnerability report",
        description:
          `302 with ${REFRESH_AFTER_HEADER} (seconds) while the scan is queued or runs (also after a restart: it runs again); ` +
          '200 with the report once done; 500 with the reason when the scan failed (scan again); 404 for an unknown id; 501 ' +
          `when Accept names no report type Tarsier produces (${MIME_VULN_REPORT_V1_1}, or the deprecated ${MIME_NATIVE_REPORT_V1_0}).`,
        params: ScanReportParams,
        response: {
          200: mediaTyped('The vulnerability report.', [MIME_VULN_REPORT_V1_1, MIME_NATIVE_REPORT_V1_0], HarborVulnerabilityReport),
          302: {
            type: 'null',
            description: 'The scan is still running: ask again after Refresh-After seconds.',
            headers: {
              [REFRESH_AFTER_HEADER]: {
                type: 'integer',
                minimum: 0,
                maximum: REFRESH_AFTER_MAX_SECONDS,
                description: 'Seconds to wait before asking again.',
              },
              Location: { type: 'string', description: 'This same report URL.' },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const accept = request.headers.accept;
      const type = reportMimeType(accept);
      if (!type) {
        throw new TarsierError(
          'not_implemented',
          `Accept ${JSON.stringify(accept)} names no report Tarsier produces: ask for ${MIME_VULN_REPORT_V1_1}`,
        );
      }
      const id = request.params.scan_request_id;
      const result = await scans.result(id);
      if (!result) throw notFound(`there is no scan ${JSON.stringify(id)}: POST /api/v1/scan answers the ids`);
      if (result.state === 'pending') {
        return reply.code(302).header(REFRESH_AFTER_HEADER, String(REFRESH_AFTER_SECONDS)).header('location', request.url).send();
      }
      const { scan, contents } = result;
      const artifact = {
        repository: scan.repository,
        digest: scan.digest,
        ...(scan.tag !== null ? { tag: scan.tag } : {}),
        ...(scan.mimeType !== null ? { mime_type: scan.mimeType } : {}),
      };
      return sendJson(reply, 200, type, harborReport(contents, artifact, new Date()));
    },
  );
}

/** The artifact Harbor asked for, checked whole before anything is recorded or fetched. */
function scanTarget(request: ScanRequest, scanner: Pick<ImageScanner, 'check'>): HarborScanTarget {
  const problem = scanRequestProblem(request);
  if (problem) throw unprocessable(problem);
  const { registry, artifact } = request;
  // Only the host: the URL's path means nothing to the registry API, and userinfo must not be kept.
  const url = new URL(registry.url!);
  const target: HarborScanTarget = {
    registry: url.host,
    repository: artifact.repository!,
    digest: artifact.digest!,
    tag: artifact.tag || null,
    mimeType: artifact.mime_type || null,
    insecure: url.protocol === 'http:',
    authorization: registry.authorization || undefined,
  };
  const reference = referenceOf(target);
  try {
    checkImageRequest({ reference });
  } catch (err) {
    throw unprocessable(`artifact: ${(err as Error).message}`, err);
  }
  // Harbor's URL cannot downgrade the transport of credentials, its own or configured ones.
  try {
    scanner.check({ reference, insecure: target.insecure, authorization: target.authorization });
  } catch (err) {
    throw unprocessable(`registry.url: ${(err as Error).message}`, err);
  }
  return target;
}

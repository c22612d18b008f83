import { Type } from '@sinclair/typebox';
import type { ImageInventory } from '../../images/inventory.js';
import { storeSbom } from '../../images/sboms.js';
import { TarsierError } from '../../errors.js';
import { readSbom, SBOM_MEDIA_TYPES } from '../../sbom/read.js';
import type { Pool } from '../../store/pool.js';
import { SBOM_BODY_LIMIT_BYTES } from '../limits.js';
import { compressedBodyError, readBody } from '../request-body.js';
import type { RouteApp } from '../route-app.js';
import { imageSummary } from './images.js';
import { SbomQuery, StoredSbom } from './schemas.js';

export interface SbomRouteDeps {
  pool: Pool;
  inventory: ImageInventory;
  bodyTimeoutMs: number;
}

/**
 * The media types the OpenAPI document names for the body: its format's own, or plain JSON. As
 * everywhere in this API (curl -d sends a form type), the body is read whatever its Content-Type:
 * the content tells the format.
 */
const DOCUMENTED_TYPES = ['application/json', ...Object.values(SBOM_MEDIA_TYPES)];

/**
 * SBOMs as input: the document is stored as an image (images/sboms.ts) and answered as the images
 * API answers a scan. The body is kept as the bytes sent, never parsed and written again, as the
 * image's digest is theirs; readSbom checks all of it before anything is stored, so a malformed
 * document is a 400 that changes nothing.
 */
export function registerSbomRoutes(app: RouteApp, deps: SbomRouteDeps): void {
  const { pool, inventory } = deps;

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    const compressed = compressedBodyError(request.headers);
    if (compressed) {
      done(compressed);
      return;
    }
    readBody(payload, request.headers, { deadlineMs: deps.bodyTimeoutMs, limitBytes: SBOM_BODY_LIMIT_BYTES }).then(
      (bytes) => done(null, bytes),
      (err: Error) => done(err),
    );
  });

  app.post(
    '/tarsier/v1/sboms',
    {
      schema: {
        tags: ['images'],
        operationId: 'postSbom',
        summary: 'Store an SBOM as an image and match its packages',
        description:
          'The body is a CycloneDX (1.4–1.6) or SPDX (2.2, 2.3) JSON document, told apart by its content (whatever the ' +
          'Content-Type), uncompressed. Every component with a ' +
          'package URL of a known ecosystem (npm, PyPI, Go, Maven, …) or distribution release (pkg:deb/debian/…?distro=debian-12) is ' +
          'matched as an image package would be; the others are answered in Skipped. The SBOM is recorded as an image whose digest ' +
          "is the document's sha256, in the repository name under the registry sbom, tagged latest (an SBOM posted later under the " +
          'same name takes the tag), with one layer named by that digest: it is listed, reported, counted again as vulnerability data ' +
          'changes and notified like every image. 201 when recorded now, 200 when this repository had it already. A malformed ' +
          'document is a 400 naming the field, and nothing is stored.',
        consumes: DOCUMENTED_TYPES,
        // For the OpenAPI document: the body is the bytes sent, checked by readSbom.
        body: Type.Unknown({ description: 'A CycloneDX 1.4–1.6 or SPDX 2.2/2.3 JSON document.' }),
        querystring: SbomQuery,
        response: { 200: StoredSbom, 201: StoredSbom },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (!Buffer.isBuffer(body) || body.length === 0) throw new TarsierError('bad_request', 'the request body is empty: send the SBOM');
      const sbom = readSbom(body);
      const { where, created } = await storeSbom(pool, sbom, request.query.name ?? sbom.name ?? sbom.digest);
      const [image] = await inventory.scanned(where, [sbom.digest]);
      if (!image) throw new TarsierError('internal', `the SBOM ${sbom.digest} was stored but cannot be read back`);
      return reply.code(created ? 201 : 200).send({
        Image: imageSummary(image),
        Skipped: sbom.skipped.map((s) => ({
          At: s.at,
          ...(s.name !== undefined ? { Name: s.name } : {}),
          ...(s.purl !== undefined ? { Purl: s.purl } : {}),
          Reason: s.reason,
          Why: s.why,
        })),
      });
    },
  );
}

import type { SwaggerOptions } from '@fastify/swagger';
import type { Config } from '../config.js';
import { TARSIER_VERSION } from '../version.js';
import { SBOM_BODY_LIMIT_BYTES } from './limits.js';

/**
 * The OpenAPI document's frame: everything but the operations, which @fastify/swagger takes from
 * the routes' own schemas (so the document cannot drift from what the routes check and send).
 */
export function openApiDocument(config: Config): NonNullable<Extract<SwaggerOptions, { openapi?: unknown }>['openapi']> {
  const auth = config.api.auth.tokens.length > 0 || config.api.auth.psk !== null;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tarsier',
      description:
        "Container-image vulnerability scanner: Clair's v1 layer API (revisions A and B, chosen per request with " +
        'X-Clair-Api-Revision) and its ancestry API (the JSON mapping of the coreos.clair gRPC services). Names in ' +
        'paths are percent-encoded and at most 1,024 characters; request bodies are JSON of at most 1 MiB, but for an SBOM ' +
        `(POST /tarsier/v1/sboms: ${SBOM_BODY_LIMIT_BYTES / (1024 * 1024)} MiB) and a layer upload (streamed).`,
      version: TARSIER_VERSION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/', description: 'This server' }],
    tags: [
      { name: 'v1 layers', description: 'Index layers and read what they contain and what affects them.' },
      { name: 'v1 vulnerabilities', description: 'The vulnerability database: namespaces, vulnerabilities and their fixes.' },
      { name: 'v1 notifications', description: 'Changes to vulnerabilities and the layers they affect.' },
      { name: 'ancestry', description: 'AncestryService: scan an image as an ancestry of layers, read it back.' },
      { name: 'notifications', description: 'NotificationService: changes to vulnerabilities and the ancestries they affect.' },
      { name: 'status', description: 'StatusService.' },
      { name: 'metrics', description: 'Prometheus metrics of this process.' },
    ],
    ...(auth
      ? {
          components: {
            securitySchemes: {
              bearer: {
                type: 'http',
                scheme: 'bearer',
                description: 'A static token (clair.api.auth.tokens) or an HS256 JWT signed with clair.api.auth.psk.',
              },
            },
          },
          security: [{ bearer: [] }],
        }
      : { security: [] }),
  };
}

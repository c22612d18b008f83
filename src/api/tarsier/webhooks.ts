import { createHash, timingSafeEqual } from 'node:crypto';
import { notFound, unauthenticated } from '../../errors.js';
import type { ImageQueue } from '../../images/queue.js';
import { applyRegistryEvents, distributionEvents, harborEvents, type RegistryEvent } from '../../images/registry-events.js';
import type { Pool } from '../../store/pool.js';
import type { RouteApp } from '../route-app.js';
import { WebhookAccepted } from './schemas.js';

export interface WebhookRouteDeps {
  pool: Pool;
  queue: ImageQueue;
  /** The whole Authorization header value callers must send (clair.webhooks.secret); empty: the routes answer 404. */
  secret: string;
}

const TAGS = ['webhooks'];

/** Whole-value comparison in constant time (hashing first makes the lengths equal). */
function sameSecret(given: string | undefined, secret: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return given !== undefined && timingSafeEqual(digest(given), digest(secret));
}

/**
 * Registry webhooks. Answered with 202 as soon as the pushes are queued for scanning (the durable
 * queue runs them) and the deletes recorded; the caller authenticates with the configured shared
 * secret instead of the API's credentials (config.webhook marks the routes for the API's
 * authentication hook).
 */
export function registerWebhookRoutes(app: RouteApp, deps: WebhookRouteDeps): void {
  const routes: Array<[path: string, summary: string, source: string, parse: (body: unknown) => RegistryEvent[]]> = [
    [
      '/tarsier/v1/webhooks/distribution',
      'Docker Distribution notification (manifest pushes are scanned, deletes recorded)',
      'distribution',
      distributionEvents,
    ],
    ['/tarsier/v1/webhooks/harbor', 'Harbor webhook (PUSH_ARTIFACT is scanned, DELETE_ARTIFACT recorded)', 'harbor', harborEvents],
  ];
  for (const [path, summary, source, parse] of routes) {
    app.post(
      path,
      {
        config: { webhook: true },
        schema: {
          tags: TAGS,
          operationId: `${source}Webhook`,
          summary,
          description:
            'Authenticated by the whole Authorization header value, which must equal clair.webhooks.secret (401 otherwise; 404 when ' +
            'no secret is configured). Answers 202 once the pushes are queued for scanning and the deletes recorded (the deleted ' +
            'images leave every answer).',
          response: { 202: WebhookAccepted },
        },
      },
      async (request, reply) => {
        if (deps.secret === '') throw notFound('registry webhooks are not enabled: set clair.webhooks.secret');
        if (!sameSecret(request.headers.authorization, deps.secret)) {
          throw unauthenticated('the Authorization header does not carry the webhook secret (clair.webhooks.secret)');
        }
        const { queued, deleted } = await applyRegistryEvents(deps, parse(request.body), source);
        request.log.info({ source, queued: queued.length, deleted: deleted.length }, 'registry webhook received');
        return reply.code(202).send({
          Queued: queued.map((q) => ({ Reference: q.reference, Job: q.job })),
          Deleted: deleted.map((d) => ({ Reference: d.reference, Images: d.images })),
        });
      },
    );
  }
}

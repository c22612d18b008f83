import { createHash, timingSafeEqual } from 'node:crypto';
import { badRequest, notFound, unauthenticated } from '../../errors.js';
import type { ImageQueue, QueuedScan } from '../../images/queue.js';
import { MEDIA_TYPES } from '../../registry/manifest.js';
import { InvalidReference, parseImageReference } from '../../registry/reference.js';
import type { RouteApp } from '../route-app.js';
import { WebhookAccepted } from './schemas.js';

export interface WebhookRouteDeps {
  queue: ImageQueue;
  /** The whole Authorization header value callers must send (clair.webhooks.secret); empty: the routes answer 404. */
  secret: string;
}

const TAGS = ['webhooks'];
const MANIFEST_TYPES = new Set<string>(Object.values(MEDIA_TYPES));

/** A pushed manifest, as both registries describe it. */
interface Push {
  /** The registry as references write it (host[:port]). */
  registry: string;
  repository: string;
  digest: string;
  tag: string | undefined;
  /** The registry announced a plain-HTTP URL for itself. */
  insecure: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Docker Distribution's envelope: `{"events": [...]}`, each with action, target {mediaType,
 * repository, digest, tag, url} and request {host}. Manifest pushes only: blob pushes, pulls and
 * deletes are ignored. The registry host is that of target.url (how the registry names itself),
 * else request.host.
 */
export function distributionPushes(body: unknown): Push[] {
  if (!isObject(body) || !Array.isArray(body.events))
    throw badRequest('the body is not a Docker Distribution notification envelope: it has no events list');
  const pushes: Push[] = [];
  for (const event of body.events) {
    if (!isObject(event) || event.action !== 'push' || !isObject(event.target)) continue;
    const target = event.target;
    if (!MANIFEST_TYPES.has(text(target.mediaType) ?? '')) continue;
    const repository = text(target.repository);
    const digest = text(target.digest);
    let url: URL | undefined;
    try {
      url = text(target.url) ? new URL(target.url as string) : undefined;
    } catch {
      url = undefined;
    }
    const registry = url?.host ?? (isObject(event.request) ? text(event.request.host) : undefined);
    if (!repository || !digest || !registry) continue;
    pushes.push({ registry, repository, digest, tag: text(target.tag), insecure: url?.protocol === 'http:' });
  }
  return pushes;
}

/**
 * Harbor's webhook: `{"type": "PUSH_ARTIFACT", "event_data": {"resources": [{digest, tag,
 * resource_url}], "repository": {repo_full_name}}}`. The registry host is the first part of
 * resource_url (`harbor.example.com/library/app:v1`). Other event types are ignored.
 */
export function harborPushes(body: unknown): Push[] {
  if (!isObject(body) || typeof body.type !== 'string') throw badRequest('the body is not a Harbor webhook event: it has no type');
  if (body.type !== 'PUSH_ARTIFACT' || !isObject(body.event_data)) return [];
  const data = body.event_data;
  const repository = isObject(data.repository) ? text(data.repository.repo_full_name) : undefined;
  if (!repository || !Array.isArray(data.resources)) return [];
  const pushes: Push[] = [];
  for (const resource of data.resources) {
    if (!isObject(resource)) continue;
    const digest = text(resource.digest);
    const registry = text(resource.resource_url)?.split('/', 1)[0];
    if (!digest || !registry) continue;
    pushes.push({ registry, repository, digest, tag: text(resource.tag), insecure: false });
  }
  return pushes;
}

/** The scan of a push: by digest (what was pushed, even if the tag moved since), recording the tag. */
function scanOf(push: Push, source: string): QueuedScan {
  const reference = `${push.registry}/${push.repository}${push.tag ? `:${push.tag}` : ''}@${push.digest}`;
  try {
    parseImageReference(reference);
  } catch (err) {
    if (err instanceof InvalidReference) throw badRequest(`the event names an image that is not a valid reference: ${err.message}`, err);
    throw err;
  }
  return { reference, source, ...(push.insecure ? { insecure: true } : {}) };
}

/** Whole-value comparison in constant time (hashing first makes the lengths equal). */
function sameSecret(given: string | undefined, secret: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return given !== undefined && timingSafeEqual(digest(given), digest(secret));
}

/**
 * Registry push webhooks. Answered with 202 as soon as the scans are queued (the durable queue
 * runs them); the caller authenticates with the configured shared secret instead of the API's
 * credentials (config.webhook marks the routes for the API's authentication hook).
 */
export function registerWebhookRoutes(app: RouteApp, deps: WebhookRouteDeps): void {
  const routes: Array<[path: string, summary: string, source: string, parse: (body: unknown) => Push[]]> = [
    [
      '/tarsier/v1/webhooks/distribution',
      'Docker Distribution notification (manifest pushes are scanned)',
      'distribution',
      distributionPushes,
    ],
    ['/tarsier/v1/webhooks/harbor', 'Harbor webhook (PUSH_ARTIFACT events are scanned)', 'harbor', harborPushes],
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
            'no secret is configured). Answers 202 once the scans are queued.',
          response: { 202: WebhookAccepted },
        },
      },
      async (request, reply) => {
        if (deps.secret === '') throw notFound('registry webhooks are not enabled: set clair.webhooks.secret');
        if (!sameSecret(request.headers.authorization, deps.secret)) {
          throw unauthenticated('the Authorization header does not carry the webhook secret (clair.webhooks.secret)');
        }
        const scans = parse(request.body).map((push) => scanOf(push, source));
        const queued: Array<{ Reference: string; Job: string }> = [];
        for (const scan of scans) queued.push({ Reference: scan.reference, Job: await deps.queue.enqueue(scan) });
        request.log.info({ source, queued: queued.length }, 'registry webhook received');
        return reply.code(202).send({ Queued: queued });
      },
    );
  }
}

import { createHash, timingSafeEqual } from 'node:crypto';
import { badRequest, notFound, TarsierError, unauthenticated } from '../../errors.js';
import type { ImageQueue, QueuedScan } from '../../images/queue.js';
import { recordDeletion, type Deletion } from '../../images/records.js';
import { MEDIA_TYPES } from '../../registry/manifest.js';
import {
  formatImageReference,
  InvalidReference,
  isDigest,
  isTag,
  parseImageReference,
  type ImageReference,
} from '../../registry/reference.js';
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
const MANIFEST_TYPES = new Set<string>(Object.values(MEDIA_TYPES));

/** A pushed manifest, as both registries describe it. */
interface Push {
  kind: 'push';
  /** The registry as references write it (host[:port]). */
  registry: string;
  repository: string;
  digest: string;
  tag: string | undefined;
  /** The registry announced a plain-HTTP URL for itself. */
  insecure: boolean;
}

/** A manifest (by digest) or a tag the registry deleted. */
interface Delete {
  kind: 'delete';
  registry: string;
  repository: string;
  digest: string | undefined;
  tag: string | undefined;
}

type RegistryEvent = Push | Delete;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
/** A tag as a reference can carry it; Harbor names an untagged artifact's "tag" by its digest. */
const tagOf = (v: unknown): string | undefined => {
  const tag = text(v);
  return tag !== undefined && isTag(tag) ? tag : undefined;
};

/**
 * Docker Distribution's envelope: `{"events": [...]}`, each with action, target and request {host}.
 * Manifest pushes (target {mediaType, repository, digest, tag, url}) are scanned; a push's registry
 * is the host of target.url (how the registry names itself), else request.host. Deletes carry no
 * media type and no URL: target {repository, digest} for a manifest (a blob's delete looks the same
 * and matches no image), target {repository, tag} for each tag the delete removed; their registry is
 * request.host, the host the deleting client used. Blob pushes and pulls are ignored.
 */
export function distributionEvents(body: unknown): RegistryEvent[] {
  if (!isObject(body) || !Array.isArray(body.events))
    throw badRequest('the body is not a Docker Distribution notification envelope: it has no events list');
  const events: RegistryEvent[] = [];
  for (const event of body.events) {
    if (!isObject(event) || !isObject(event.target)) continue;
    const target = event.target;
    const repository = text(target.repository);
    const digest = text(target.digest);
    const requestHost = isObject(event.request) ? text(event.request.host) : undefined;
    if (event.action === 'delete') {
      // Images are recorded by sha256 manifest digest only: a delete of anything else concerns none.
      const deleted = digest !== undefined && isDigest(digest) ? digest : undefined;
      const tag = tagOf(target.tag);
      if (!repository || !requestHost || (deleted === undefined) === (tag === undefined)) continue;
      events.push({ kind: 'delete', registry: requestHost, repository, digest: deleted, tag });
      continue;
    }
    if (event.action !== 'push' || !MANIFEST_TYPES.has(text(target.mediaType) ?? '')) continue;
    let url: URL | undefined;
    try {
      url = text(target.url) ? new URL(target.url as string) : undefined;
    } catch {
      url = undefined;
    }
    const registry = url?.host ?? requestHost;
    if (!repository || !digest || !registry) continue;
    events.push({ kind: 'push', registry, repository, digest, tag: tagOf(target.tag), insecure: url?.protocol === 'http:' });
  }
  return events;
}

/**
 * Harbor's webhook: `{"type": "PUSH_ARTIFACT" | "DELETE_ARTIFACT", "event_data": {"resources":
 * [{digest, tag, resource_url}], "repository": {repo_full_name}}}`. The registry host is the first
 * part of resource_url (`harbor.example.com/library/app:v1`). A deleted artifact goes with all its
 * tags. Other event types are ignored.
 */
export function harborEvents(body: unknown): RegistryEvent[] {
  if (!isObject(body) || typeof body.type !== 'string') throw badRequest('the body is not a Harbor webhook event: it has no type');
  if ((body.type !== 'PUSH_ARTIFACT' && body.type !== 'DELETE_ARTIFACT') || !isObject(body.event_data)) return [];
  const data = body.event_data;
  const repository = isObject(data.repository) ? text(data.repository.repo_full_name) : undefined;
  if (!repository || !Array.isArray(data.resources)) return [];
  const events: RegistryEvent[] = [];
  for (const resource of data.resources) {
    if (!isObject(resource)) continue;
    const digest = text(resource.digest);
    const registry = text(resource.resource_url)?.split('/', 1)[0];
    if (!digest || !registry) continue;
    events.push(
      body.type === 'PUSH_ARTIFACT'
        ? { kind: 'push', registry, repository, digest, tag: tagOf(resource.tag), insecure: false }
        : { kind: 'delete', registry, repository, digest, tag: undefined },
    );
  }
  return events;
}

/** An event's image reference, checked: a 400 naming what is wrong when the registry sent something no reference can be. */
function referenceOf(event: { registry: string; repository: string; digest: string | undefined; tag: string | undefined }): {
  written: string;
  reference: ImageReference;
} {
  const { registry, repository, tag, digest } = event;
  const written = formatImageReference({ registry, repository, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) });
  try {
    return { written, reference: parseImageReference(written) };
  } catch (err) {
    if (err instanceof InvalidReference) throw badRequest(`the event names an image that is not a valid reference: ${err.message}`, err);
    throw err;
  }
}

/** What an event does: a push is scanned by digest (what was pushed), recording its tag; a delete is recorded at once. */
type Action = { scan: QueuedScan } | { deletion: Deletion; reference: string };

function actionOf(event: RegistryEvent, source: string): Action {
  const { written, reference } = referenceOf(event);
  if (event.kind === 'push') return { scan: { reference: written, source, ...(event.insecure ? { insecure: true } : {}) } };
  const where = { registry: reference.registry, repository: reference.repository };
  return { deletion: { where, digest: event.digest, tag: event.tag }, reference: written };
}

/**
 * A push's scan as the queue would take it: an http: URL in the event asks for plain HTTP, which
 * the registry's credentials never travel over unless the configuration says so.
 */
function checkScan(queue: Pick<ImageQueue, 'check'>, scan: QueuedScan): void {
  try {
    queue.check(scan);
  } catch (err) {
    if (!(err instanceof TarsierError)) throw err;
    const why = scan.insecure ? 'the event names the registry by an http: URL; ' : '';
    throw new TarsierError(err.code, `${why}${err.message}`, { cause: err });
  }
}

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
        // Every event checked before anything is queued or deleted.
        const actions = parse(request.body).map((event) => actionOf(event, source));
        for (const action of actions) if ('scan' in action) checkScan(deps.queue, action.scan);
        const queued: Array<{ Reference: string; Job: string }> = [];
        const deleted: Array<{ Reference: string; Images: number }> = [];
        // In the order the registry sent them: a delete and a push of the same manifest end as the registry did.
        for (const action of actions) {
          if ('scan' in action) queued.push({ Reference: action.scan.reference, Job: await deps.queue.enqueue(action.scan) });
          else deleted.push({ Reference: action.reference, Images: await recordDeletion(deps.pool, action.deletion) });
        }
        request.log.info({ source, queued: queued.length, deleted: deleted.length }, 'registry webhook received');
        return reply.code(202).send({ Queued: queued, Deleted: deleted });
      },
    );
  }
}

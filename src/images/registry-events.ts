import { badRequest, TarsierError } from '../errors.js';
import { MEDIA_TYPES } from '../registry/manifest.js';
import {
  formatImageReference,
  InvalidReference,
  isDigest,
  isTag,
  parseImageReference,
  type ImageReference,
} from '../registry/reference.js';
import type { Pool } from '../store/pool.js';
import type { ImageQueue, QueuedScan } from './queue.js';
import { recordDeletion, type Deletion } from './records.js';

/**
 * What a registry's events mean for the images Tarsier records: a manifest push is scanned, by the
 * digest pushed, with its tag; a delete of a manifest or a tag is recorded at once. The registries'
 * webhooks (src/api/tarsier/webhooks.ts) read the bodies and answer; the events are parsed and
 * acted on here.
 */

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

export type RegistryEvent = Push | Delete;

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
function referenceOf(event: RegistryEvent): { written: string; reference: ImageReference } {
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

/** What the events did: the scans queued (the reference and its job) and the deletes recorded (the image records they deleted). */
export interface AppliedEvents {
  queued: Array<{ reference: string; job: string }>;
  deleted: Array<{ reference: string; images: number }>;
}

/**
 * Queues the pushes for scanning and records the deletes, once every event is checked: an event
 * naming something no reference can be, or plain HTTP the registry's credentials would travel over,
 * fails them all before anything is queued or deleted. source names the registry's kind in the
 * queued scans (distribution, harbor).
 */
export async function applyRegistryEvents(
  deps: { pool: Pool; queue: Pick<ImageQueue, 'check' | 'enqueue'> },
  events: readonly RegistryEvent[],
  source: string,
): Promise<AppliedEvents> {
  const actions = events.map((event) => actionOf(event, source));
  for (const action of actions) if ('scan' in action) checkScan(deps.queue, action.scan);
  const applied: AppliedEvents = { queued: [], deleted: [] };
  // In the order the registry sent them: a delete and a push of the same manifest end as the registry did.
  for (const action of actions) {
    if ('scan' in action) applied.queued.push({ reference: action.scan.reference, job: await deps.queue.enqueue(action.scan) });
    else applied.deleted.push({ reference: action.reference, images: await recordDeletion(deps.pool, action.deletion) });
  }
  return applied;
}

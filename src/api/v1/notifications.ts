import type { FastifyRequest } from 'fastify';
import { badRequest, notFound } from '../../errors.js';
import {
  findNotification,
  layersIntroducing,
  markNotificationRead,
  notifiedVulnerability,
  type IntroducingLayer,
  type NotificationRow,
} from '../../store/notifications.js';
import type { Pool } from '../../store/pool.js';
import type { PageTokens } from '../paging.js';
import { DEFAULT_NOTIFICATION_PAGE } from '../limits.js';
import { pageToken, revisionOf } from './request.js';
import { Empty, NotificationParams, NotificationQuery, NotificationResponse } from './schemas.js';
import { unixSeconds } from '../v3/proto-json.js';
import * as serialize from './serialize.js';
import type { Revision } from './serialize.js';
import type { RouteApp } from '../route-app.js';

export interface NotificationRouteDeps {
  pool: Pool;
  pageTokens: PageTokens;
  defaultRevision: Revision;
}

/** A side with no more layers (or no vulnerability) in a page token, as in Clair. */
const EXHAUSTED = -1;

/** Clair's notification token: where each side's next page starts (a layer id, or -1). */
interface NotificationPage {
  OldVulnerability: number;
  NewVulnerability: number;
}

function notificationPage(payload: unknown): NotificationPage {
  const p = payload as Partial<NotificationPage> | null;
  const valid = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= EXHAUSTED;
  if (!p || typeof p !== 'object' || !valid(p.OldVulnerability) || !valid(p.NewVulnerability)) {
    throw badRequest('page is not a token of a notification; start again from the first page');
  }
  return { OldVulnerability: p.OldVulnerability!, NewVulnerability: p.NewVulnerability! };
}

interface Side {
  layers: IntroducingLayer[];
  next: number;
}

export function registerNotificationRoutes(app: RouteApp, deps: NotificationRouteDeps): void {
  const { pool, pageTokens } = deps;
  const revision = (request: FastifyRequest): Revision => revisionOf(request, deps.defaultRevision);

  /** One side's page: limit layers from start, and where the next page starts. */
  const side = async (vulnerabilityId: number | null, start: number, limit: number): Promise<Side> => {
    if (vulnerabilityId === null || start === EXHAUSTED) return { layers: [], next: EXHAUSTED };
    const rows = await layersIntroducing(pool, vulnerabilityId, start, limit + 1);
    return { layers: rows.slice(0, limit), next: rows.length > limit ? rows[limit]!.id : EXHAUSTED };
  };

  const vulnerabilityWithLayers = async (notification: NotificationRow, which: 'old' | 'new', page: Side, rev: Revision) => {
    if ((which === 'old' ? notification.oldVulnerabilityId : notification.newVulnerabilityId) === null) return undefined;
    const v = await notifiedVulnerability(pool, notification, which);
    if (!v) throw notFound(`notification ${notification.name} does not exist`); // purged since it was read
    return {
      Vulnerability: serialize.vulnerability(v, rev, { fixedIn: true, versionFormat: v.versionFormat }),
      OrderedLayersIntroducingVulnerability: page.layers.map((l) => ({ Index: l.id, LayerName: l.name })),
      LayersIntroducingVulnerability: page.layers.map((l) => l.name),
    };
  };

  const tags = ['v1 notifications'];

  app.get(
    '/v1/notifications/:name',
    {
      schema: {
        operationId: 'getNotification',
        summary: 'A notification: the old and new vulnerability and the layers each affects',
        description: 'Both sides are paged together (limit layers each, default 100); follow NextPage until it is absent.',
        tags,
        params: NotificationParams,
        querystring: NotificationQuery,
        response: { 200: NotificationResponse },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? DEFAULT_NOTIFICATION_PAGE; // the schema's default
      const token = pageToken(request.query.page);
      const start: NotificationPage = token ? notificationPage(pageTokens.decode(token)) : { OldVulnerability: 0, NewVulnerability: 0 };
      const notification = await findNotification(pool, request.params.name);
      if (!notification) throw notFound(`notification ${request.params.name} does not exist`);
      const [oldSide, newSide] = await Promise.all([
        side(notification.oldVulnerabilityId, start.OldVulnerability, limit),
        side(notification.newVulnerabilityId, start.NewVulnerability, limit),
      ]);
      const rev = revision(request);
      const done = oldSide.next === EXHAUSTED && newSide.next === EXHAUSTED;
      const [Old, New] = await Promise.all([
        vulnerabilityWithLayers(notification, 'old', oldSide, rev),
        vulnerabilityWithLayers(notification, 'new', newSide, rev),
      ]);
      return {
        Notification: {
          Name: notification.name,
          Created: unixSeconds(notification.createdAt)!,
          Notified: unixSeconds(notification.notifiedAt),
          Deleted: unixSeconds(notification.deletedAt),
          Limit: limit,
          Page: token ?? pageTokens.encode(start),
          ...(done ? {} : { NextPage: pageTokens.encode({ OldVulnerability: oldSide.next, NewVulnerability: newSide.next }) }),
          Old,
          New,
        },
      };
    },
  );

  app.delete(
    '/v1/notifications/:name',
    {
      schema: {
        operationId: 'markNotificationRead',
        summary: 'Mark a notification read: it is not delivered again',
        tags,
        params: NotificationParams,
        response: { 200: Empty },
      },
    },
    async (request, reply) => {
      if (!(await markNotificationRead(pool, request.params.name))) throw notFound(`notification ${request.params.name} does not exist`);
      return reply.code(200).send();
    },
  );
}

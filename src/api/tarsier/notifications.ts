import { badRequest, notFound } from '../../errors.js';
import type { ImageInventory, NotifiedSide } from '../../images/inventory.js';
import { riskMetadata } from '../../model/risk.js';
import { findNotification } from '../../store/notifications.js';
import type { Pool } from '../../store/pool.js';
import type { PageTokens } from '../paging.js';
import type { RouteApp } from '../route-app.js';
import { DEFAULT_IMAGE_PAGE, ImageNotification, NotificationParams, PageQuery } from './schemas.js';

export interface NotificationRouteDeps {
  pool: Pool;
  inventory: ImageInventory;
  pageTokens: PageTokens;
}

/** Where each side's next page starts (-1: that side is done), for one notification. */
interface SidesPage {
  OldAfter: number;
  NewAfter: number;
  Notification: string;
}

const DONE = -1;

/**
 * A notification in the images view: the vulnerability before and after the change, each with
 * the images (repository, tags, digest) it affects. The same notification as GET
 * /v1/notifications/{name} and /notifications/{name}, read without marking it read.
 */
export function registerImageNotificationRoutes(app: RouteApp, deps: NotificationRouteDeps): void {
  const { pool, inventory, pageTokens } = deps;
  app.get(
    '/tarsier/v1/notifications/:name',
    {
      schema: {
        tags: ['images'],
        operationId: 'getImageNotification',
        summary: 'A notification: the images a vulnerability change affects',
        description:
          'The vulnerability before (Old) and after (New) the change, each with up to limit images it affects, in the order ' +
          'they were recorded; NextPage continues both sides.',
        params: NotificationParams,
        querystring: PageQuery,
        response: { 200: ImageNotification },
      },
    },
    async (request) => {
      const { name } = request.params;
      const limit = request.query.limit ?? DEFAULT_IMAGE_PAGE;
      const notification = await findNotification(pool, name);
      if (!notification) throw notFound(`notification ${name} is not known`);
      const start = sidesStart(pageTokens, request.query.page, name);
      const unlessDone = (after: number) => (after === DONE ? undefined : after);
      const after = { old: unlessDone(start.OldAfter), new: unlessDone(start.NewAfter) };
      const { old, new: fresh } = await inventory.notifiedSides(notification, after, limit);
      const nextAfter = (side: NotifiedSide | undefined) => (side && side.images.length === limit ? side.images[limit - 1]!.id : DONE);
      const next: SidesPage = { OldAfter: nextAfter(old), NewAfter: nextAfter(fresh), Notification: name };
      const more = next.OldAfter !== DONE || next.NewAfter !== DONE;
      const view = (s: NotifiedSide | undefined) =>
        s && {
          Vulnerability: {
            Name: s.vulnerability.name,
            NamespaceName: s.vulnerability.namespace,
            Description: s.vulnerability.description,
            Link: s.vulnerability.link,
            Severity: s.vulnerability.severity,
            ...riskMetadata(s.vulnerability.name, s.vulnerability.risk),
          },
          Images: s.images.map((i) => ({
            Registry: i.registry,
            Repository: i.repository,
            Digest: i.digest,
            Platform: i.platform,
            Tags: i.tags,
          })),
        };
      return {
        Notification: {
          Name: notification.name,
          Created: notification.createdAt.toISOString(),
          ...(notification.notifiedAt ? { Notified: notification.notifiedAt.toISOString() } : {}),
          ...(notification.deletedAt ? { Deleted: notification.deletedAt.toISOString() } : {}),
          ...(old ? { Old: view(old) } : {}),
          ...(fresh ? { New: view(fresh) } : {}),
          ...(more ? { NextPage: pageTokens.encode(next) } : {}),
        },
      };
    },
  );
}

function sidesStart(tokens: PageTokens, token: string | undefined, notification: string): SidesPage {
  if (token === undefined || token === '') return { OldAfter: 0, NewAfter: 0, Notification: notification };
  const payload = tokens.decode(token) as Partial<SidesPage> | null;
  const valid = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= DONE;
  if (!payload || !valid(payload.OldAfter) || !valid(payload.NewAfter) || payload.Notification !== notification) {
    throw badRequest('page is a token of another list; start again from the first page');
  }
  return payload as SidesPage;
}

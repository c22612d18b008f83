import { badRequest, notFound, TarsierError } from '../../errors.js';
import { ancestriesAffectedBy, type AffectedAncestry } from '../../store/ancestries.js';
import { findNotification, markNotificationRead } from '../../store/notifications.js';
import type { Pool } from '../../store/pool.js';
import { findVulnerabilityById } from '../../store/vulnerabilities.js';
import type { PageTokens } from '../paging.js';
import type { Static } from '@sinclair/typebox';
import { DEFAULT_NOTIFICATION_PAGE } from '../limits.js';
import { metadataText, unixSeconds, withoutDefaults } from './proto-json.js';
import { EmptyMessage, GetNotificationResponse, NotificationParams, NotificationQuery } from './schemas.js';
import type { RouteApp } from '../route-app.js';

export interface NotificationRouteDeps {
  pool: Pool;
  pageTokens: PageTokens;
}

type SideName = 'old' | 'new';

/**
 * A side's page token: where its next page starts (an ancestry id), as Clair v3's {"StartID": n},
 * plus the side and the notification it belongs to, so a token passed for the other side or for
 * another notification is refused instead of silently skipping ancestries. Tokens holding only
 * StartID (Clair's shape) are accepted.
 */
interface SidePage {
  StartID: number;
  Side?: SideName;
  Notification?: string;
}

const PAGE_PARAMETERS = { old: 'old_vulnerability_page', new: 'new_vulnerability_page' } as const;
/** lowerCamelCase spellings, also accepted (grpc-gateway matched only the proto names). */
const CAMEL_PARAMETERS = { old: 'oldVulnerabilityPage', new: 'newVulnerabilityPage' } as const;

/** The side's token as given ('' or absent: first page) and where it starts. */
type Query = Static<typeof NotificationQuery>;

function sideStart(query: Query, side: SideName, notification: string, tokens: PageTokens): { token: string | undefined; start: number } {
  const parameter = PAGE_PARAMETERS[side];
  const token = query[parameter] || query[CAMEL_PARAMETERS[side]] || undefined;
  if (token === undefined) return { token, start: 0 };
  let payload: Partial<SidePage> | null;
  try {
    payload = tokens.decode(token, parameter) as Partial<SidePage> | null;
  } catch (err) {
    // The shared decoder speaks of the v1 field; here the page tokens come from next_page.
    if (err instanceof TarsierError) throw new TarsierError(err.code, err.message.replace('NextPage', 'next_page'), { cause: err });
    throw err;
  }
  const start = payload && typeof payload === 'object' ? payload.StartID : undefined;
  if (typeof start !== 'number' || !Number.isSafeInteger(start) || start < 0) {
    throw badRequest(`${parameter} is not a page token of a notification; start again from the first page`);
  }
  if (payload!.Side !== undefined && payload!.Side !== side) {
    throw badRequest(
      `${parameter} is a page token of the ${payload!.Side} side: pass it as ${PAGE_PARAMETERS[payload!.Side as SideName] ?? 'the other parameter'}`,
    );
  }
  if (payload!.Notification !== undefined && payload!.Notification !== notification) {
    throw badRequest(`${parameter} is a page token of another notification; start again from the first page`);
  }
  return { token, start };
}

export function registerNotificationRoutes(app: RouteApp, deps: NotificationRouteDeps): void {
  const { pool, pageTokens } = deps;
  const mint = (side: SideName, notification: string, start: number): string =>
    pageTokens.encode({ StartID: start, Side: side, Notification: notification } satisfies SidePage);

  /** PagedVulnerableAncestries of one side, or undefined when the side has no vulnerability. */
  const pagedSide = async (
    side: SideName,
    notification: string,
    vulnerabilityId: number | null,
    page: { token: string | undefined; start: number },
    limit: number,
  ): Promise<Record<string, unknown> | undefined> => {
    if (vulnerabilityId === null) return undefined;
    const [v, rows] = await Promise.all([
      findVulnerabilityById(pool, vulnerabilityId),
      ancestriesAffectedBy(pool, vulnerabilityId, page.start, limit + 1),
    ]);
    if (!v) return undefined; // purged meanwhile
    const ancestries: AffectedAncestry[] = rows.slice(0, limit);
    const next = rows.length > limit ? rows[limit]!.id : undefined;
    return {
      current_page: page.token ?? mint(side, notification, page.start),
      next_page: next === undefined ? undefined : mint(side, notification, next),
      limit,
      vulnerability: {
        name: v.name,
        namespace_name: v.namespace,
        description: v.description,
        link: v.link,
        severity: v.severity,
        metadata: metadataText(v.metadata),
      },
      ancestries: ancestries.map((a) => ({ index: a.id, name: a.name })),
    };
  };

  const tags = ['notifications'];

  app.get(
    '/notifications/:name',
    {
      schema: {
        operationId: 'getNotificationOfAncestries',
        summary: 'A notification: the old and new vulnerability and the ancestries each affects (NotificationService.GetNotification)',
        description: 'Each side is paged on its own: follow its next_page with old_vulnerability_page or new_vulnerability_page.',
        tags,
        params: NotificationParams,
        querystring: NotificationQuery,
        response: { 200: GetNotificationResponse },
      },
    },
    async (request) => {
      const name = request.params.name;
      if (name === '') throw badRequest('notification name should not be empty');
      const query = request.query;
      const limit = query.limit ?? DEFAULT_NOTIFICATION_PAGE; // the schema's default
      const oldPage = sideStart(query, 'old', name, pageTokens);
      const newPage = sideStart(query, 'new', name, pageTokens);
      const notification = await findNotification(pool, name);
      if (!notification) throw notFound(`requested notification '${name}' is not found`);
      const [oldSide, newSide] = await Promise.all([
        pagedSide('old', name, notification.oldVulnerabilityId, oldPage, limit),
        pagedSide('new', name, notification.newVulnerabilityId, newPage, limit),
      ]);
      return withoutDefaults({
        notification: {
          name: notification.name,
          created: unixSeconds(notification.createdAt),
          notified: unixSeconds(notification.notifiedAt),
          deleted: unixSeconds(notification.deletedAt),
          old: oldSide,
          new: newSide,
        },
      });
    },
  );

  app.delete(
    '/notifications/:name',
    {
      schema: {
        operationId: 'markNotificationOfAncestriesRead',
        summary: 'Mark a notification read (NotificationService.MarkNotificationAsRead)',
        tags,
        params: NotificationParams,
        response: { 200: EmptyMessage },
      },
    },
    async (request) => {
      const name = request.params.name;
      if (name === '') throw badRequest('notification name should not be empty');
      if (!(await markNotificationRead(pool, name))) throw notFound(`requested notification '${name}' is not found`);
      return {};
    },
  );
}

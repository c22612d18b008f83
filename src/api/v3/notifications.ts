import { DEFAULT_NOTIFICATION_PAGE } from '../limits.js';
import type { RouteApp } from '../route-app.js';
import { EmptyMessage, GetNotificationResponse, NotificationParams, NotificationQuery } from './schemas.js';
import type { AncestryOperations } from './operations.js';

/** GET and DELETE /notifications/{name}: NotificationService over grpc-gateway's JSON mapping. */
export function registerNotificationRoutes(app: RouteApp, operations: AncestryOperations): void {
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
      const { query } = request;
      return operations.getNotification({
        name: request.params.name,
        limit: query.limit ?? DEFAULT_NOTIFICATION_PAGE, // the schema's default
        // lowerCamelCase spellings are accepted too (grpc-gateway matched only the proto names).
        oldPage: query.old_vulnerability_page || query.oldVulnerabilityPage,
        newPage: query.new_vulnerability_page || query.newVulnerabilityPage,
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
    async (request) => operations.markNotificationAsRead(request.params.name),
  );
}

import { NAMESPACE_DETECTORS, PACKAGE_LISTERS } from '../../ecosystems/index.js';
import type { Queryable } from '../../store/pool.js';
import { updaterStates } from '../../store/updater-state.js';
import { timestamp, withoutDefaults } from './proto-json.js';
import { GetStatusResponse } from './schemas.js';
import type { RouteApp } from '../route-app.js';

/** The package listers and namespace detectors every layer is scanned with, by name, in run order. */
export const LISTER_NAMES: readonly string[] = PACKAGE_LISTERS.map((l) => l.name);
export const DETECTOR_NAMES: readonly string[] = NAMESPACE_DETECTORS.map((d) => d.name);

export interface ServiceStatus {
  listers: string[];
  detectors: string[];
  /** RFC 3339; absent before the first successful updater run. */
  last_update_time?: string;
}

/** ServiceStatus now: the configured listers and detectors and the last successful updater run of any source. */
export async function serviceStatus(db: Queryable): Promise<ServiceStatus> {
  let last: Date | null = null;
  for (const state of await updaterStates(db)) {
    if (state.lastSuccessAt && (last === null || state.lastSuccessAt > last)) last = state.lastSuccessAt;
  }
  return withoutDefaults({
    listers: [...LISTER_NAMES],
    detectors: [...DETECTOR_NAMES],
    last_update_time: timestamp(last),
  }) as ServiceStatus;
}

export function registerStatusRoutes(app: RouteApp, deps: { pool: Queryable }): void {
  app.get(
    '/status',
    {
      schema: {
        operationId: 'getStatus',
        summary: 'The listers and detectors layers are scanned with, and the last vulnerability update (StatusService.GetStatus)',
        tags: ['status'],
        response: { 200: GetStatusResponse },
      },
    },
    async () => ({ status: await serviceStatus(deps.pool) }),
  );
}

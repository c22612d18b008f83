import { withTransaction, type Pool, type Queryable } from '../../src/store/pool.js';
import { markQueuedChange, SUMMARY_CURRENT } from '../../src/store/summaries.js';

/** Whether lists would read this ancestry's summary as current (SUMMARY_CURRENT): not stale, no queued change touching it. */
export async function summaryCurrent(db: Queryable, ancestryId: number): Promise<boolean> {
  const { rows } = await db.query<{ current: boolean }>(
    `SELECT ${SUMMARY_CURRENT('s', 's.ancestry_id')} AS current FROM ancestry_summary s WHERE s.ancestry_id = $1`,
    [ancestryId],
  );
  return rows[0]!.current;
}

/** Applies every queued change as the refreshers do (marks the summaries it touches stale), in batches of batchSize. */
export async function markAllQueued(pool: Pool, batchSize = 1_000): Promise<void> {
  while ((await withTransaction(pool, (client) => markQueuedChange(client, batchSize))) !== undefined);
}

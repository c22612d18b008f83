import type { Queryable } from './pool.js';

/**
 * The image queue's jobs (src/images/queue.ts) in graphile-worker's table: which workers hold
 * them, for the sweep that unlocks the jobs of workers that are gone, and how many wait or run,
 * for the queue depth metric. The queue names its tasks; other tasks' jobs are not counted.
 */

/** A worker that holds jobs, with the lease it registered under (none when it never registered). */
export interface JobWorker {
  workerId: string;
  /** The lease's owner; null: no lease row for the worker. */
  owner: string | null;
  /** The lease has lapsed; null: no lease row. */
  lapsed: boolean | null;
  /** Its job was locked longer ago than the grace given to a worker still registering. */
  old: boolean;
}

const SELECT_LOCKED_WORKERS = `
  SELECT DISTINCT j.locked_by AS "workerId", l.owner, l.until < now() AS lapsed,
         j.locked_at < now() - $2 * interval '1 second' AS old
  FROM graphile_worker.jobs j
  LEFT JOIN lock l ON l.name = $1 || j.locked_by
  WHERE j.locked_by IS NOT NULL AND j.task_identifier = ANY($3::text[])`;
const SELECT_DEPTH = `
  SELECT count(*) FILTER (WHERE locked_by IS NULL AND attempts < max_attempts) AS waiting,
         count(*) FILTER (WHERE locked_by IS NOT NULL) AS running
  FROM graphile_worker.jobs WHERE task_identifier = ANY($1::text[])`;

/** The workers holding jobs of these tasks; a worker's lease is the lock named leasePrefix + its id. */
export async function lockedJobWorkers(
  db: Queryable,
  tasks: readonly string[],
  leasePrefix: string,
  unregisteredGraceSeconds: number,
): Promise<JobWorker[]> {
  return (await db.query<JobWorker>(SELECT_LOCKED_WORKERS, [leasePrefix, unregisteredGraceSeconds, tasks])).rows;
}

/** Jobs of these tasks waiting (ready or backing off, with attempts left) and running. */
export async function jobDepth(db: Queryable, tasks: readonly string[]): Promise<{ waiting: number; running: number }> {
  const row = (await db.query<{ waiting: number; running: number }>(SELECT_DEPTH, [tasks])).rows[0]!;
  return { waiting: row.waiting, running: row.running };
}

import type { Queryable } from './pool.js';

/**
 * Scans Harbor asked for through the Pluggable Scanner API (migrations/0004_images.sql,
 * 0005_harbor_scan_artifact.sql), by the id the scan answer gave, and the job of the durable queue
 * (graphile-worker) that runs each. What Harbor sent to authorize the pull is never written here,
 * in the row or in the job: only the artifact, the state and which process holds the authorization.
 */

export type HarborScanState = 'pending' | 'done' | 'failed';

export interface NewHarborScan {
  id: string;
  /** The registry as references write it (host[:port]), never the URL Harbor sent (it may carry userinfo). */
  registry: string;
  repository: string;
  digest: string;
  tag: string | null;
  mimeType: string | null;
  /** The lease-owner name of the process that accepted the scan and holds Harbor's authorization in memory (src/store/locks.ts). */
  owner: string;
}

export interface HarborScanRow extends NewHarborScan {
  state: HarborScanState;
  error: string | null;
  /** A job that may still run the scan is queued (or running). */
  queued: boolean;
}

/** The queued job that runs a scan: its task, what it carries (no credentials), and its flags. */
export interface HarborScanJob {
  task: string;
  payload: Record<string, unknown>;
  maxAttempts: number;
  flags: readonly string[];
}

/** A scan's job is keyed by the scan id after this: one job per scan, found again by it. */
const JOB_KEY_PREFIX = 'harbor-scan/';

const INSERT_SCAN = `
  INSERT INTO harbor_scan (id, registry, repository, digest, tag, mime_type, state, owner)
  VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7)`;
const ADD_JOB = `
  SELECT id FROM graphile_worker.add_job($1, $2::json, job_key => $3, max_attempts => $4, flags => $5::text[])`;
/** A job may still run the scan: it is running, or has attempts left (one that used them up stays, locked by no one). */
const JOB_QUEUED = `
  EXISTS (SELECT 1 FROM graphile_worker.jobs j
          WHERE j.key = '${JOB_KEY_PREFIX}' || s.id AND (j.locked_at IS NOT NULL OR j.attempts < j.max_attempts))`;
const COLUMNS = `s.id, s.registry, s.repository, s.digest, s.tag, s.mime_type AS "mimeType", s.state, s.error, s.owner`;
const SELECT_SCAN = `SELECT ${COLUMNS}, ${JOB_QUEUED} AS queued FROM harbor_scan s WHERE s.id = $1`;
const FINISH_SCAN = `UPDATE harbor_scan SET state = $2, error = $3, updated_at = now() WHERE id = $1 AND state = 'pending'`;
const FAIL_LOST_SCAN = `
  UPDATE harbor_scan s SET state = 'failed', error = $2, updated_at = now()
  WHERE s.id = $1 AND s.state = 'pending' AND NOT ${JOB_QUEUED}
  RETURNING ${COLUMNS}, false AS queued`;
const DELETE_OLD_SCANS = `DELETE FROM harbor_scan WHERE created_at < now() - $1 * interval '1 millisecond'`;

/** Records a pending scan and queues its job; run both in one transaction, so neither is ever without the other. */
export async function insertHarborScan(db: Queryable, scan: NewHarborScan, job: HarborScanJob): Promise<void> {
  await db.query(INSERT_SCAN, [scan.id, scan.registry, scan.repository, scan.digest, scan.tag, scan.mimeType, scan.owner]);
  await db.query(ADD_JOB, [job.task, JSON.stringify(job.payload), JOB_KEY_PREFIX + scan.id, job.maxAttempts, job.flags]);
}

/** The scan with this id (a UUID). */
export async function findHarborScan(db: Queryable, id: string): Promise<HarborScanRow | undefined> {
  return (await db.query<HarborScanRow>(SELECT_SCAN, [id])).rows[0];
}

/** Records a running scan's outcome; a scan already ended keeps its outcome. */
export async function finishHarborScan(
  db: Queryable,
  id: string,
  outcome: { state: 'done' } | { state: 'failed'; error: string },
): Promise<void> {
  await db.query(FINISH_SCAN, [id, outcome.state, outcome.state === 'failed' ? outcome.error : null]);
}

/** Marks a pending scan failed when no job can run it any more; returns the row when it was marked. */
export async function failLostHarborScan(db: Queryable, id: string, error: string): Promise<HarborScanRow | undefined> {
  return (await db.query<HarborScanRow>(FAIL_LOST_SCAN, [id, error])).rows[0];
}

/** Forgets scans created more than maxAgeMs ago (Harbor reads a report once, soon after the scan). */
export async function deleteHarborScansOlderThan(db: Queryable, maxAgeMs: number): Promise<number> {
  return (await db.query(DELETE_OLD_SCANS, [maxAgeMs])).rowCount ?? 0;
}

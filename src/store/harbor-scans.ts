import type { Queryable } from './pool.js';

/**
 * Scans Harbor asked for through the Pluggable Scanner API (migrations/0004_images.sql,
 * 0005_harbor_scan_artifact.sql), by the id the scan answer gave. What Harbor sent to authorize the
 * pull is never written here: only the artifact, the state and which process runs the scan.
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
  /** The lease-owner name of the process running the scan (src/store/locks.ts). */
  owner: string;
}

export interface HarborScanRow extends NewHarborScan {
  state: HarborScanState;
  error: string | null;
  /** Pending, and not touched by its owner for longer than the staleness limit it was read with. */
  stale: boolean;
}

const COLUMNS = `id, registry, repository, digest, tag, mime_type AS "mimeType", state, error, owner`;

export async function insertHarborScan(db: Queryable, scan: NewHarborScan): Promise<void> {
  await db.query(
    `INSERT INTO harbor_scan (id, registry, repository, digest, tag, mime_type, state, owner)
     VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7)`,
    [scan.id, scan.registry, scan.repository, scan.digest, scan.tag, scan.mimeType, scan.owner],
  );
}

/** The scan with this id (a UUID); stale judged against staleAfterMs of the database's clock. */
export async function findHarborScan(db: Queryable, id: string, staleAfterMs: number): Promise<HarborScanRow | undefined> {
  const { rows } = await db.query<HarborScanRow>(
    `SELECT ${COLUMNS}, state = 'pending' AND updated_at < now() - $2 * interval '1 millisecond' AS stale
     FROM harbor_scan WHERE id = $1`,
    [id, staleAfterMs],
  );
  return rows[0];
}

/** Records a running scan's outcome; a scan already judged interrupted keeps that verdict. */
export async function finishHarborScan(
  db: Queryable,
  id: string,
  outcome: { state: 'done' } | { state: 'failed'; error: string },
): Promise<void> {
  await db.query(`UPDATE harbor_scan SET state = $2, error = $3, updated_at = now() WHERE id = $1 AND state = 'pending'`, [
    id,
    outcome.state,
    outcome.state === 'failed' ? outcome.error : null,
  ]);
}

/**
 * Marks a pending scan failed when its owner is known to be gone, or has not touched it for
 * staleAfterMs (checked again here, so a heartbeat that landed since the read wins). Returns the
 * row when it was marked.
 */
export async function failInterruptedHarborScan(
  db: Queryable,
  id: string,
  judgement: { ownerIsGone: boolean; staleAfterMs: number; error: string },
): Promise<HarborScanRow | undefined> {
  const { rows } = await db.query<HarborScanRow>(
    `UPDATE harbor_scan SET state = 'failed', error = $2, updated_at = now()
     WHERE id = $1 AND state = 'pending' AND ($3 OR updated_at < now() - $4 * interval '1 millisecond')
     RETURNING ${COLUMNS}, false AS stale`,
    [id, judgement.error, judgement.ownerIsGone, judgement.staleAfterMs],
  );
  return rows[0];
}

/** The owner's heartbeat: these scans are still running. */
export async function touchHarborScans(db: Queryable, ids: readonly string[]): Promise<void> {
  await db.query(`UPDATE harbor_scan SET updated_at = now() WHERE id = ANY($1::uuid[]) AND state = 'pending'`, [ids]);
}

/** Forgets scans created more than maxAgeMs ago (Harbor reads a report once, soon after the scan). */
export async function deleteHarborScansOlderThan(db: Queryable, maxAgeMs: number): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM harbor_scan WHERE created_at < now() - $1 * interval '1 millisecond'`, [maxAgeMs]);
  return rowCount ?? 0;
}

import type pg from 'pg';
import { SEVERITIES, type Severity } from '../model/vulnerability.js';
import type { Queryable } from './pool.js';
import { IN_KEV } from './risk.js';

/**
 * Ancestry summaries (migrations/0009_ancestry_summary.sql): each image's vulnerability counts and
 * its risk sort key, kept so images can be ranked without reading every image's packages. The
 * triggers of 0009 queue the feature versions a change may alter summaries through (summary_change,
 * migration 0024); markQueuedChange marks the summaries of the ancestries holding them stale, and
 * computeSummaries writes them again. Counted by FINDING_COUNTS, as the images API counts where a
 * summary is not current (SUMMARY_CURRENT).
 */

/**
 * The finding counts of each ancestry whose features (ancestry_feature rows `af`) meet the
 * condition: countFindings (model/finding-counts.ts) in SQL, each live vulnerability once by name
 * at its highest severity, fixable when an affected package has a fix, known exploited when KEV
 * lists it. One row per ancestry some vulnerability affects (none for the others): ancestry_id,
 * counts (jsonb: severity → { total, fixable }) and known_exploited.
 */
export const FINDING_COUNTS = (ancestries: string): string => `
  SELECT ancestry_id, jsonb_object_agg(severity, jsonb_build_object('total', total, 'fixable', fixable)) AS counts,
         sum(kev)::int AS known_exploited
  FROM (
    SELECT ancestry_id, severity, count(*)::int AS total, (count(*) FILTER (WHERE fixable))::int AS fixable,
           (count(*) FILTER (WHERE kev))::int AS kev
    FROM (
      SELECT af.ancestry_id, v.name, max(v.severity) AS severity, bool_or(fi.fixed_version IS NOT NULL) AS fixable,
             bool_or(${IN_KEV}) AS kev
      FROM ancestry_feature af
      JOIN vulnerability_affects va ON va.feature_version_id = af.feature_version_id
      JOIN vulnerability v ON v.id = va.vulnerability_id AND v.deleted_at IS NULL
      JOIN vulnerability_fixedin fi ON fi.id = va.fixedin_id
      WHERE ${ancestries}
      GROUP BY af.ancestry_id, v.name
    ) per_vulnerability
    GROUP BY ancestry_id, severity
  ) per_severity
  GROUP BY ancestry_id`;

/** The total of one severity in counts c (FINDING_COUNTS'), 0 when none. */
const totalOf = (severity: Severity): string => `coalesce((c.counts->'${severity}'->>'total')::int, 0)`;

/**
 * Computes the summaries of these ancestries (FINDING_COUNTS) and stores them, fresh, with their
 * rank: known exploited first, then the counts from the most severe down.
 */
const COMPUTE = `
  WITH counted AS (${FINDING_COUNTS('af.ancestry_id = ANY ($1::bigint[])')})
  INSERT INTO ancestry_summary (ancestry_id, counts, known_exploited, risk, stale, computed_at)
  SELECT a.id, coalesce(c.counts, '{}'), coalesce(c.known_exploited, 0),
         ARRAY[coalesce(c.known_exploited, 0), ${SEVERITIES.toReversed().map(totalOf).join(', ')}],
         false, now()
  FROM ancestry a LEFT JOIN counted c ON c.ancestry_id = a.id
  WHERE a.id = ANY ($1::bigint[])
  ON CONFLICT (ancestry_id) DO UPDATE SET counts = EXCLUDED.counts, known_exploited = EXCLUDED.known_exploited,
    risk = EXCLUDED.risk, stale = false, computed_at = EXCLUDED.computed_at`;

/**
 * True when a queued change (summary_change) not yet marked up to ancestry `ancestry` (an SQL
 * expression) touches it: from the writer's commit until the marking reaches the ancestry, its
 * summary may miss the change whatever its stale flag says. The first EXISTS does not depend on the
 * row (PostgreSQL evaluates it once per query), so with an empty queue this costs nothing per row;
 * otherwise a probe of ancestry_feature's primary key per queued change and feature version:
 * bounded by the size of the changes waiting, not by the number of images.
 */
export const CHANGE_QUEUED_FOR = (ancestry: string): string => `
  (EXISTS (SELECT 1 FROM summary_change)
    AND EXISTS (SELECT 1 FROM summary_change q
                WHERE q.marked_through < ${ancestry}
                  AND EXISTS (SELECT 1 FROM ancestry_feature qf
                              WHERE qf.ancestry_id = ${ancestry} AND qf.feature_version_id = ANY (q.feature_versions))))`;

/**
 * True when summary s of ancestry `ancestry` holds the counts of now: it is not stale, and no
 * queued change touches it (CHANGE_QUEUED_FOR). Once the marking has gone past the ancestry, the
 * stale flag says it and the queued change no longer counts for it, so a summary computed again
 * after the marking is current at once.
 */
export const SUMMARY_CURRENT = (s: string, ancestry: string): string => `(${s}.stale IS FALSE AND NOT ${CHANGE_QUEUED_FOR(ancestry)})`;

/** The oldest queued change no other transaction is marking, locked until the caller's transaction ends. */
const CLAIM_CHANGE = `
  SELECT id, feature_versions, marked_through FROM summary_change ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`;

/**
 * The next $3 ancestries (by id, after $2) holding any of the feature versions $1: for each
 * feature version, the next $3 of its ancestries from the (feature_version_id, ancestry_id) index,
 * then the first $3 of those. Index-driven and bounded by feature versions × $3 rows, whatever the
 * size of the fleet or work_mem.
 */
const NEXT_HOLDERS = `
  SELECT DISTINCT h.ancestry_id FROM unnest($1::integer[]) fv(id)
  CROSS JOIN LATERAL (SELECT af.ancestry_id FROM ancestry_feature af
                      WHERE af.feature_version_id = fv.id AND af.ancestry_id > $2
                      ORDER BY af.ancestry_id LIMIT $3) h
  ORDER BY h.ancestry_id LIMIT $3`;

/**
 * Locks these summaries, stale or not, in ancestry order: a refresher computing one holds its lock
 * (CLAIM_STALE), so this waits until it commits and its result, which may have missed the change,
 * is marked stale below instead of being left current. Ancestry order: two markers never wait for
 * each other in a circle.
 */
const LOCK_SUMMARIES = `
  SELECT ancestry_id FROM ancestry_summary WHERE ancestry_id = ANY ($1::bigint[]) ORDER BY ancestry_id FOR UPDATE`;

/** A statement of its own, so it reads the rows as the refreshers it waited for left them; ones already stale are left alone. */
const MARK_STALE = `UPDATE ancestry_summary SET stale = true WHERE ancestry_id = ANY ($1::bigint[]) AND NOT stale`;

/** Stale summaries no other transaction is computing, locked until the caller's transaction ends. */
const CLAIM_STALE = `
  SELECT ancestry_id FROM ancestry_summary WHERE stale ORDER BY ancestry_id LIMIT $1 FOR UPDATE SKIP LOCKED`;

/** Computes and stores the summaries of these ancestries (in the caller's transaction, if any). */
export async function computeSummaries(db: Queryable, ancestryIds: readonly number[]): Promise<void> {
  if (ancestryIds.length === 0) return;
  await db.query(COMPUTE, [ancestryIds]);
}

/**
 * Computes up to limit stale summaries in one transaction of the caller's: rows other replicas are
 * computing are skipped. A change committed meanwhile is queued and readers do not take these rows
 * as current (SUMMARY_CURRENT) until its marking marks them stale again, after this commits (the
 * marking locks every row it marks, stale or not, so it waits for this one): nothing is lost.
 * Returns how many were computed.
 */
export async function refreshStaleSummaries(client: pg.PoolClient, limit: number): Promise<number> {
  const ids = (await client.query<{ ancestry_id: number }>(CLAIM_STALE, [limit])).rows.map((r) => r.ancestry_id);
  await computeSummaries(client, ids);
  return ids.length;
}

/**
 * Applies one batch of the oldest queued change no other transaction is applying, in the caller's
 * transaction: marks stale the summaries of the next `limit` ancestries (in id order) holding its
 * feature versions and moves its cursor past them, or deletes it once none is left. Returns how
 * many ancestries it went through, or undefined when no change was waiting.
 */
export async function markQueuedChange(client: pg.PoolClient, limit: number): Promise<number | undefined> {
  const change = (await client.query<{ id: string; feature_versions: number[]; marked_through: string }>(CLAIM_CHANGE)).rows[0];
  if (!change) return undefined;
  const holders = (
    await client.query<{ ancestry_id: string }>(NEXT_HOLDERS, [change.feature_versions, change.marked_through, limit])
  ).rows.map((r) => r.ancestry_id);
  if (holders.length > 0) {
    await client.query(LOCK_SUMMARIES, [holders]);
    const marked = await client.query(MARK_STALE, [holders]);
    // Other replicas help compute what this batch marked.
    if ((marked.rowCount ?? 0) > 0) await client.query("SELECT pg_notify('tarsier_summaries', '')");
  }
  if (holders.length < limit) await client.query('DELETE FROM summary_change WHERE id = $1', [change.id]);
  else await client.query('UPDATE summary_change SET marked_through = $2 WHERE id = $1', [change.id, holders.at(-1)]);
  return holders.length;
}

import type pg from 'pg';
import { SEVERITIES, type Severity } from '../model/vulnerability.js';
import type { Queryable } from './pool.js';
import { IN_KEV } from './risk.js';

/**
 * Ancestry summaries (migrations/0009_ancestry_summary.sql): each image's vulnerability counts and
 * its risk sort key, kept so images can be ranked without reading every image's packages. The
 * triggers of 0009 mark a summary stale when a change may alter it; computeSummaries writes it
 * again. Counted by FINDING_COUNTS, as the images API counts where a summary is stale.
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
 * computing are skipped. A change made meanwhile marks its rows stale again after this commits
 * (its trigger locks every row it marks, stale or not, so it waits for this one), so nothing is
 * lost. Returns how many were computed.
 */
export async function refreshStaleSummaries(client: pg.PoolClient, limit: number): Promise<number> {
  const ids = (await client.query<{ ancestry_id: number }>(CLAIM_STALE, [limit])).rows.map((r) => r.ancestry_id);
  await computeSummaries(client, ids);
  return ids.length;
}

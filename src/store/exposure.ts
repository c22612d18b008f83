import type { Queryable } from './pool.js';

/**
 * Exposure over time (the changes page's chart): for each of the last days (UTC), how
 * many vulnerabilities were live at the end of that day (now, for today) and affect an image
 * scanned now, per severity. Read from the vulnerability versions' lifetimes (created_at,
 * deleted_at) and their vulnerability_affects rows (a superseded version keeps its rows), joined
 * to the ancestries images point at (ancestry.name = image.digest). The packages are the images'
 * packages now: the chart shows how the vulnerability data moved, not how the images did.
 *
 * Counted as the images API counts an image's vulnerabilities: each vulnerability once by name, at
 * the highest severity its live versions give (so a day's counts add up to the distinct names);
 * Defcon1 counts as Critical; Negligible and Unknown are left out.
 */

/** The severities of the chart, most severe first. */
export const EXPOSURE_SEVERITIES = ['Critical', 'High', 'Medium', 'Low'] as const;
export type ExposureSeverity = (typeof EXPOSURE_SEVERITIES)[number];

export interface ExposureDay {
  /** YYYY-MM-DD (UTC). */
  day: string;
  counts: Record<ExposureSeverity, number>;
}

/**
 * $1 days ending today. A version counts on a day when it was live at the day's end (created at
 * or before, deleted after): a change retires a version and inserts the next at the same instant
 * (one transaction), so a name is never counted twice through two versions of one namespace.
 *
 * Cost, in passes that do not depend on how many images a vulnerability affects:
 * - held: the feature versions some vulnerability affects that an image holds, each checked once
 *   by indexes until the first hit (ancestry_feature_fan_out, the ancestry's key, image_digest;
 *   a scalar subquery with LIMIT, so it stays a per-row probe and never becomes a hash of every
 *   ancestry_feature row);
 * - relevant: the versions live at some day's end of the window (one pass over vulnerability),
 *   kept when one of their affects rows names a held feature version (a hash join);
 * - names whose versions did not change within the window (nearly all) are counted once for every
 *   day; only the names that did are evaluated per day.
 * About 150 ms for 50,000 vulnerabilities and 10,000 images of 200 packages.
 */
const SELECT_EXPOSURE = `
  WITH bounds AS (
    SELECT now() AS now, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS today),
  days AS MATERIALIZED (
    SELECT ((b.today - k * interval '1 day') AT TIME ZONE 'UTC')::date AS day, least(b.today - (k - 1) * interval '1 day', b.now) AS at
    FROM bounds b, generate_series(0, $1::int - 1) k),
  span AS (SELECT min(at) AS first, max(at) AS last FROM days),
  held AS MATERIALIZED (
    SELECT f.id FROM (SELECT DISTINCT feature_version_id AS id FROM vulnerability_affects) f
    WHERE (
      SELECT 1 FROM ancestry_feature af
      WHERE af.feature_version_id = f.id
        -- Correlated on the ancestry's id: joined instead, the planner merged every row of the
        -- fan-out index against a full scan of the ancestry key, per feature version (441 ms).
        AND EXISTS (SELECT 1 FROM ancestry a JOIN image i ON i.digest = a.name WHERE a.id = af.ancestry_id)
      LIMIT 1) IS NOT NULL),
  relevant AS MATERIALIZED (
    SELECT v.name, CASE WHEN v.severity = 'Defcon1' THEN 'Critical'::severity ELSE v.severity END AS severity,
           v.created_at, v.deleted_at
    FROM vulnerability v, span
    WHERE v.created_at <= span.last AND (v.deleted_at IS NULL OR v.deleted_at > span.first) AND v.severity >= 'Low'
      AND EXISTS (SELECT 1 FROM vulnerability_affects va JOIN held h ON h.id = va.feature_version_id WHERE va.vulnerability_id = v.id)),
  names AS MATERIALIZED (
    SELECT r.name, max(r.severity) AS severity, bool_and(r.created_at <= span.first AND r.deleted_at IS NULL) AS steady
    FROM relevant r, span GROUP BY r.name),
  steady AS (SELECT severity, count(*) AS n FROM names WHERE steady GROUP BY severity),
  changing AS MATERIALIZED (
    SELECT r.* FROM relevant r WHERE r.name IN (SELECT name FROM names WHERE NOT steady)),
  moving AS (
    SELECT d.day, m.severity, count(*) AS n
    FROM days d CROSS JOIN LATERAL (
      SELECT r.name, max(r.severity) AS severity FROM changing r
      WHERE r.created_at <= d.at AND (r.deleted_at IS NULL OR r.deleted_at > d.at)
      GROUP BY r.name) m
    GROUP BY d.day, m.severity)
  SELECT d.day::text AS day, s.severity::text AS severity, (coalesce(st.n, 0) + coalesce(mv.n, 0))::int AS n
  FROM days d
  CROSS JOIN unnest('{Critical,High,Medium,Low}'::severity[]) s (severity)
  LEFT JOIN steady st ON st.severity = s.severity
  LEFT JOIN moving mv ON mv.day = d.day AND mv.severity = s.severity
  ORDER BY d.day`;

/** The last `days` days (UTC, oldest first, today last) with their counts per severity. */
export async function exposureOverTime(db: Queryable, days = 30): Promise<ExposureDay[]> {
  const { rows } = await db.query<{ day: string; severity: ExposureSeverity; n: number }>(SELECT_EXPOSURE, [days]);
  const byDay = new Map<string, ExposureDay>();
  for (const row of rows) {
    let entry = byDay.get(row.day);
    if (!entry) byDay.set(row.day, (entry = { day: row.day, counts: { Critical: 0, High: 0, Medium: 0, Low: 0 } }));
    entry.counts[row.severity] = row.n;
  }
  return [...byDay.values()];
}

import type pg from 'pg';
import type { Severity } from '../model/vulnerability.js';
import type { Enrichment } from '../model/source-data.js';
import type { Queryable } from './pool.js';

const SELECT = 'SELECT cve, nvd, severity FROM nvd_enrichment WHERE cve = ANY($1::text[])';
/** Inserts new CVEs and updates changed ones; returns exactly those (jsonb compares by value). */
const UPSERT = `
  INSERT INTO nvd_enrichment (cve, nvd, severity) SELECT * FROM unnest($1::text[], $2::jsonb[], $3::severity[])
  ON CONFLICT (cve) DO UPDATE SET nvd = EXCLUDED.nvd, severity = EXCLUDED.severity
    WHERE nvd_enrichment.nvd IS DISTINCT FROM EXCLUDED.nvd OR nvd_enrichment.severity IS DISTINCT FROM EXCLUDED.severity
  RETURNING cve`;

/**
 * Feed-written live vulnerabilities, among cves, whose NVD part differs from the stored NVD data:
 * the metadata's NVD entry, or the severity when the source gave none (see enrich()).
 */
const SELECT_STALE = `
  SELECT n.name AS namespace, v.updater, v.name FROM vulnerability v
  JOIN namespace n ON n.id = v.namespace_id JOIN nvd_enrichment e ON e.cve = v.name
  WHERE v.name = ANY($1::text[]) AND v.deleted_at IS NULL AND v.updater IS NOT NULL
    AND (v.metadata->'NVD' IS DISTINCT FROM e.nvd
         OR (coalesce(v.source_severity, v.severity) = 'Unknown' AND v.severity IS DISTINCT FROM e.severity))`;

/** Feed-written live advisories listing any of the CVEs, with what NVD's part of them is now. */
const SELECT_ADVISORY_CANDIDATES = `
  SELECT n.name AS namespace, v.updater, v.name, v.cves, v.metadata->'NVD' AS nvd, v.severity,
         coalesce(v.source_severity, v.severity) AS "sourceSeverity"
  FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.cves && $1::text[] AND v.cves <> '{}' AND v.deleted_at IS NULL AND v.updater IS NOT NULL`;

export interface AdvisoryCandidate extends StaleEnrichment {
  cves: string[];
  nvd: unknown;
  severity: Severity;
  sourceSeverity: Severity;
}

/** Advisories whose NVD part may be stale after NVD's data for these CVEs changed; the caller compares. */
export async function staleAdvisoryCandidates(db: Queryable, cves: readonly string[]): Promise<AdvisoryCandidate[]> {
  if (cves.length === 0) return [];
  return (await db.query<AdvisoryCandidate>(SELECT_ADVISORY_CANDIDATES, [cves])).rows;
}

export interface StaleEnrichment {
  namespace: string;
  updater: string;
  name: string;
}

export async function staleEnrichment(db: Queryable, cves: readonly string[]): Promise<StaleEnrichment[]> {
  if (cves.length === 0) return [];
  return (await db.query<StaleEnrichment>(SELECT_STALE, [cves])).rows;
}

export async function loadEnrichment(db: Queryable, cves: readonly string[]): Promise<Map<string, Enrichment>> {
  if (cves.length === 0) return new Map();
  const { rows } = await db.query<{ cve: string; nvd: Enrichment['nvd']; severity: Severity }>(SELECT, [cves]);
  return new Map(rows.map((r) => [r.cve, { nvd: r.nvd, severity: r.severity as Enrichment['severity'] }]));
}

/** Stores NVD's data; returns the CVEs whose data is new or changed. */
export async function storeEnrichment(client: pg.PoolClient, data: ReadonlyMap<string, Enrichment>): Promise<string[]> {
  const cves = [...data.keys()];
  if (cves.length === 0) return [];
  const { rows } = await client.query<{ cve: string }>(UPSERT, [
    cves,
    cves.map((c) => JSON.stringify(data.get(c)!.nvd)),
    cves.map((c) => data.get(c)!.severity),
  ]);
  return rows.map((r) => r.cve);
}

import type { Vulnerability } from '../model/vulnerability.js';
import type { Enrichment } from '../model/source-data.js';
import type { VersionFormatName } from '../model/version-format.js';
import type { Pool } from './pool.js';
import { FIXED_IN_FIELDS, storedFixedIn, type FixedInRow } from './vulnerabilities.js';

/**
 * What an offline bundle carries (updater/bundle.ts), read from the live records: each source's
 * as the source gave them, and those written through the API as they are.
 */

const FIXED_IN = `
  coalesce((SELECT json_agg(json_build_object(${FIXED_IN_FIELDS}) ORDER BY f.name, fi.id)
            FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id WHERE fi.vulnerability_id = v.id), '[]') AS fixed_in`;

/** The namespaces holding live records of a writer: an updater ($1), or the API ($1 NULL). */
const SELECT_NAMESPACES = `
  SELECT n.name, n.version_format AS format FROM namespace n
  WHERE EXISTS (SELECT 1 FROM vulnerability v WHERE v.namespace_id = n.id AND v.updater IS NOT DISTINCT FROM $1 AND v.deleted_at IS NULL)
  ORDER BY n.name`;
/** A source's live records with the severity and metadata the source gave (NVD's part removed). */
const SELECT_SOURCE_RECORDS = `
  SELECT v.name, v.description, v.link, coalesce(v.source_severity, v.severity) AS severity, v.metadata - 'NVD' AS metadata, v.cves,
         v.created_at, ${FIXED_IN}
  FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.updater = $1 AND n.name = $2 AND v.deleted_at IS NULL AND v.name > $3 ORDER BY v.name LIMIT $4`;
/** Records written through the API, exactly as they are live (their metadata and severity are what was written). */
const SELECT_API_RECORDS = `
  SELECT v.name, v.description, v.link, v.severity, v.metadata, v.cves, v.created_at, ${FIXED_IN}
  FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.updater IS NULL AND n.name = $1 AND v.deleted_at IS NULL AND v.name > $2 ORDER BY v.name LIMIT $3`;
const SELECT_ENRICHMENT = 'SELECT cve, nvd, severity FROM nvd_enrichment ORDER BY cve';

interface RecordRow {
  name: string;
  description: string;
  link: string;
  severity: Vulnerability['severity'];
  metadata: Record<string, unknown> | null;
  fixed_in: FixedInRow[];
  cves: string[];
  created_at: Date;
}

export interface ExportedRecord {
  vulnerability: Vulnerability;
  /** When this version was written. */
  writtenAt: Date;
}

const exported = (namespace: string, r: RecordRow): ExportedRecord => ({
  vulnerability: {
    namespace,
    name: r.name,
    description: r.description,
    link: r.link,
    severity: r.severity,
    metadata: r.metadata && Object.keys(r.metadata).length > 0 ? r.metadata : null,
    fixedIn: r.fixed_in.map(storedFixedIn),
    ...(r.cves.length > 0 ? { cves: r.cves } : {}),
  },
  writtenAt: r.created_at,
});

/** The namespaces where an updater (null: the API) has live records, with their version formats. */
export async function namespacesWrittenBy(pool: Pool, updater: string | null): Promise<Array<{ name: string; format: VersionFormatName }>> {
  return (await pool.query<{ name: string; format: VersionFormatName }>(SELECT_NAMESPACES, [updater])).rows;
}

/** Records read per query: a namespace may hold hundreds of thousands (OSV's npm). */
const RECORDS_PAGE = 2_000;

/** An updater's live records of a namespace, as its source gave them, by name; updater null: the API's, as they are. */
export async function* recordsWrittenBy(pool: Pool, updater: string | null, namespace: string): AsyncGenerator<ExportedRecord> {
  for (let after = ''; ;) {
    const { rows } =
      updater === null
        ? await pool.query<RecordRow>(SELECT_API_RECORDS, [namespace, after, RECORDS_PAGE])
        : await pool.query<RecordRow>(SELECT_SOURCE_RECORDS, [updater, namespace, after, RECORDS_PAGE]);
    for (const r of rows) yield exported(namespace, r);
    if (rows.length < RECORDS_PAGE) return;
    after = rows[rows.length - 1]!.name;
  }
}

/** NVD's stored data per CVE. */
export async function allEnrichment(pool: Pool): Promise<Array<{ cve: string } & Enrichment>> {
  return (await pool.query<{ cve: string } & Enrichment>(SELECT_ENRICHMENT)).rows;
}

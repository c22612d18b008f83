import type pg from 'pg';
import type { Severity } from '../model/vulnerability.js';
import type { Enrichment } from '../updater/types.js';
import type { Queryable } from './pool.js';

const SELECT = 'SELECT cve, nvd, severity FROM nvd_enrichment WHERE cve = ANY($1::text[])';
/** Inserts new CVEs and updates changed ones; returns exactly those (jsonb compares by value). */
const UPSERT = `
  INSERT INTO nvd_enrichment (cve, nvd, severity) SELECT * FROM unnest($1::text[], $2::jsonb[], $3::severity[])
  ON CONFLICT (cve) DO UPDATE SET nvd = EXCLUDED.nvd, severity = EXCLUDED.severity
    WHERE nvd_enrichment.nvd IS DISTINCT FROM EXCLUDED.nvd OR nvd_enrichment.severity IS DISTINCT FROM EXCLUDED.severity
  RETURNING cve`;

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

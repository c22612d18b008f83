import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { EpssFile, EpssScore, KevCatalog, KevEntry, RiskChange, RiskContext } from '../model/risk.js';
import type { Queryable } from './pool.js';

/**
 * EPSS scores and KEV entries (migrations/0008_risk_context.sql), per CVE, and the one rule that
 * joins them to a vulnerability: over the CVE ids it stands for (vulnerability_cves), the highest
 * EPSS score and the earliest KEV entry, each with the CVE it came from.
 */

/**
 * A condition on the vulnerability row aliased `v`: one of its CVEs (vulnerability_cves) is in KEV. The catalog is
 * small (about 1,500 CVEs), so it is read once per statement (a hashed subplan and one array),
 * never probed per row: after the daily replace, before statistics catch up, per-row probes
 * became a scan of the table for every vulnerability row.
 */
export const IN_KEV = `(v.name IN (SELECT cve FROM kev) OR (v.name NOT LIKE 'CVE-%' AND v.cves && ARRAY(SELECT cve FROM kev)))`;

/**
 * Columns `epss` and `kev` (jsonb, NULL when none) of the risk context of the vulnerability row
 * aliased `v`. Every read that shows vulnerabilities selects these.
 */
export const RISK_COLUMNS = `
  (SELECT jsonb_build_object('cve', e.cve, 'score', e.score, 'percentile', e.percentile, 'date', e.scored_on::text)
     FROM epss e WHERE e.cve = ANY (vulnerability_cves(v.name, v.cves)) ORDER BY e.score DESC, e.cve LIMIT 1) AS epss,
  CASE WHEN ${IN_KEV} THEN
    (SELECT jsonb_build_object('cve', k.cve, 'dateAdded', k.date_added::text, 'dueDate', coalesce(k.due_date::text, ''),
                               'knownRansomwareCampaignUse', k.known_ransomware_campaign_use)
       FROM kev k WHERE k.cve = ANY (vulnerability_cves(v.name, v.cves)) ORDER BY k.date_added, k.cve LIMIT 1) END AS kev`;

/** The columns RISK_COLUMNS adds to a row. */
export interface RiskColumns {
  epss: RiskContext['epss'] | null;
  kev: RiskContext['kev'] | null;
}

/** A row's RISK_COLUMNS as a RiskContext (absent keys for none). */
export function riskContextOf(row: RiskColumns): RiskContext {
  return { ...(row.epss ? { epss: row.epss } : {}), ...(row.kev ? { kev: row.kev } : {}) };
}

/** A condition on the vulnerability row aliased `v`: one of its CVEs has an EPSS score of at least the parameter named. */
export const EPSS_AT_LEAST = (parameter: string): string =>
  `EXISTS (SELECT 1 FROM epss e WHERE e.cve = ANY (vulnerability_cves(v.name, v.cves)) AND e.score >= ${parameter})`;

/**
 * The KEV catalog's advisory lock (class 3; classes 1 and 2 are store/features.ts'): replaceKev
 * holds it exclusively, a transaction computing an image summary shares it. A summary computed
 * from the old catalog by a transaction the replace cannot see yet (a new ancestry) would
 * otherwise be stored fresh after the replace marked the others stale.
 */
const KEV_LOCK_CLASS = 3;

/** Waits for a KEV replace under way, and holds one off, until the caller's transaction ends. */
export async function shareKevLock(client: pg.PoolClient): Promise<void> {
  await client.query(`SELECT pg_advisory_xact_lock_shared(${KEV_LOCK_CLASS}, 0)`);
}

const CREATE_INCOMING_EPSS = `
  CREATE TEMPORARY TABLE epss_incoming (cve text NOT NULL, score double precision NOT NULL, percentile double precision NOT NULL)
  ON COMMIT DROP`;
const COPY_INCOMING_EPSS = 'COPY epss_incoming (cve, score, percentile) FROM STDIN';
const DELETE_MISSING_EPSS = 'DELETE FROM epss e WHERE NOT EXISTS (SELECT 1 FROM epss_incoming i WHERE i.cve = e.cve)';
/** A CVE listed twice keeps its first row's values (DISTINCT ON needs an order: the lowest score, which is deterministic). */
const UPSERT_EPSS = `
  INSERT INTO epss (cve, score, percentile, scored_on)
  SELECT DISTINCT ON (cve) cve, score, percentile, $1::date FROM epss_incoming ORDER BY cve, score
  ON CONFLICT (cve) DO UPDATE SET score = EXCLUDED.score, percentile = EXCLUDED.percentile, scored_on = EXCLUDED.scored_on
  WHERE (epss.score, epss.percentile, epss.scored_on) IS DISTINCT FROM (EXCLUDED.score, EXCLUDED.percentile, EXCLUDED.scored_on)`;

/** COPY text rows of scores, in batches (one string per batch: a Readable per row would cost more than the parse). */
async function* copyLines(scores: AsyncIterable<EpssScore>): AsyncGenerator<string> {
  let batch = '';
  let rows = 0;
  for await (const s of scores) {
    // CVE ids are checked by the parser (CVE-\d+-\d+): nothing in them needs COPY escaping.
    batch += `${s.cve}\t${s.score}\t${s.percentile}\n`;
    if (++rows === 2_000) {
      yield batch;
      batch = '';
      rows = 0;
    }
  }
  if (batch !== '') yield batch;
}

/**
 * Replaces the EPSS table with a file's scores, streamed through COPY (memory stays flat whatever
 * the file's size); the caller's transaction makes it all or nothing. Returns the rows written or
 * deleted.
 */
export async function replaceEpss(client: pg.PoolClient, file: EpssFile): Promise<number> {
  await client.query(CREATE_INCOMING_EPSS);
  await pipeline(Readable.from(copyLines(file.scores)), client.query(copyFrom(COPY_INCOMING_EPSS)));
  const deleted = await client.query(DELETE_MISSING_EPSS);
  const upserted = await client.query(UPSERT_EPSS, [file.date]);
  await client.query('DROP TABLE epss_incoming');
  return (deleted.rowCount ?? 0) + (upserted.rowCount ?? 0);
}

const KEV_COLUMNS =
  'cve, vendor_project, product, vulnerability_name, date_added, due_date, known_ransomware_campaign_use, required_action';
const INCOMING_KEV = `
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::date[], $6::date[], $7::text[], $8::text[])
    AS t (${KEV_COLUMNS})`;
/** The CVEs whose entry the catalog adds, changes or drops. */
const CHANGED_KEV = `
  WITH incoming AS (${INCOMING_KEV})
  SELECT coalesce(i.cve, k.cve) AS cve FROM incoming i FULL JOIN kev k ON k.cve = i.cve
  WHERE (i.*) IS DISTINCT FROM (k.*)`;
const DELETE_MISSING_KEV = 'DELETE FROM kev WHERE NOT (cve = ANY ($1::text[]))';
const UPSERT_KEV = `
  INSERT INTO kev (${KEV_COLUMNS}) ${INCOMING_KEV}
  ON CONFLICT (cve) DO UPDATE SET vendor_project = EXCLUDED.vendor_project, product = EXCLUDED.product,
    vulnerability_name = EXCLUDED.vulnerability_name, date_added = EXCLUDED.date_added, due_date = EXCLUDED.due_date,
    known_ransomware_campaign_use = EXCLUDED.known_ransomware_campaign_use, required_action = EXCLUDED.required_action
  WHERE (kev.*) IS DISTINCT FROM (EXCLUDED.*)`;

/** Live vulnerabilities standing for any of these CVEs, with their KEV context now. */
const SELECT_KEV_OF = `
  SELECT v.id, ${RISK_COLUMNS}
  FROM vulnerability v
  WHERE v.deleted_at IS NULL AND (v.name = ANY ($1::text[]) OR v.cves && $1::text[])`;

const kevArrays = (entries: readonly KevEntry[]) => [
  entries.map((e) => e.cve),
  entries.map((e) => e.vendorProject),
  entries.map((e) => e.product),
  entries.map((e) => e.vulnerabilityName),
  entries.map((e) => e.dateAdded),
  entries.map((e) => (e.dueDate === '' ? null : e.dueDate)),
  entries.map((e) => e.knownRansomwareCampaignUse),
  entries.map((e) => e.requiredAction),
];

const sameKev = (a: RiskContext['kev'] | null, b: RiskContext['kev'] | null): boolean => JSON.stringify(a) === JSON.stringify(b);

/** A live vulnerability whose KEV context a catalog change altered. */
export interface RiskNotice {
  readonly vulnerabilityId: number;
  readonly change: RiskChange;
}

/**
 * Replaces the KEV table with a catalog. Returns the CVEs whose entry changed and, when asked
 * for, the live vulnerabilities whose KEV context that alters (a CVE they stand for added to the
 * catalog, changed or removed). Runs in the caller's transaction.
 */
export async function replaceKev(
  client: pg.PoolClient,
  catalog: KevCatalog,
  options: { notices: boolean },
): Promise<{ changed: string[]; notices: RiskNotice[] }> {
  await client.query(`SELECT pg_advisory_xact_lock(${KEV_LOCK_CLASS}, 0)`);
  const arrays = kevArrays(catalog.entries);
  const changed = (await client.query<{ cve: string }>(CHANGED_KEV, arrays)).rows.map((r) => r.cve);
  if (changed.length === 0) return { changed, notices: [] };
  const before = options.notices ? await kevOf(client, changed) : new Map<number, RiskContext['kev'] | null>();
  await client.query(DELETE_MISSING_KEV, [arrays[0]]);
  await client.query(UPSERT_KEV, arrays);
  const notices: RiskNotice[] = [];
  if (options.notices) {
    for (const [vulnerabilityId, now] of await kevOf(client, changed)) {
      const old = before.get(vulnerabilityId) ?? null;
      if (!sameKev(old, now)) notices.push({ vulnerabilityId, change: { kev: { old, new: now } } });
    }
  }
  return { changed, notices };
}

async function kevOf(client: pg.PoolClient, cves: readonly string[]): Promise<Map<number, RiskContext['kev'] | null>> {
  const { rows } = await client.query<{ id: number } & RiskColumns>(SELECT_KEV_OF, [cves]);
  return new Map(rows.map((r) => [r.id, r.kev]));
}

/** How many CVEs the table holds. */
export async function riskRecords(db: Queryable, table: 'epss' | 'kev'): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table === 'epss' ? 'epss' : 'kev'}`);
  return rows[0]!.n;
}

const EXPORT_PAGE = 10_000;

/** The stored EPSS scores, with the day they were scored, a page at a time (for bundles). */
export async function* allEpss(db: Queryable): AsyncGenerator<EpssScore & { date: string }> {
  for (let after = ''; ;) {
    const { rows } = await db.query<EpssScore & { date: string }>(
      'SELECT cve, score, percentile, scored_on::text AS date FROM epss WHERE cve > $1 ORDER BY cve LIMIT $2',
      [after, EXPORT_PAGE],
    );
    yield* rows;
    if (rows.length < EXPORT_PAGE) return;
    after = rows[rows.length - 1]!.cve;
  }
}

/** The stored KEV entries (for bundles). */
export async function allKev(db: Queryable): Promise<KevEntry[]> {
  const { rows } = await db.query<KevEntry>(`
    SELECT cve, vendor_project AS "vendorProject", product, vulnerability_name AS "vulnerabilityName",
           date_added::text AS "dateAdded", coalesce(due_date::text, '') AS "dueDate",
           known_ransomware_campaign_use AS "knownRansomwareCampaignUse", required_action AS "requiredAction"
    FROM kev ORDER BY cve`);
  return rows;
}

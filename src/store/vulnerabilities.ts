import type pg from 'pg';
import type { VersionFormatName } from '../model/version-format.js';
import type { FixedIn, Severity, StatedFixState, Vulnerability } from '../model/vulnerability.js';
import { FEATURE_LOCK_BUCKETS, FEATURE_LOCK_CLASS, lockFeatures, NAMESPACE_LOCK_CLASS } from './features.js';
import type { RiskContext } from '../model/risk.js';
import type { Queryable } from './pool.js';
import { RISK_COLUMNS, riskContextOf, type RiskColumns } from './risk.js';

export interface NamespaceRow {
  id: number;
  name: string;
  versionFormat: VersionFormatName;
}

/** A stored vulnerability version. */
export interface StoredVulnerability extends Vulnerability {
  readonly id: number;
  readonly updater: string | null;
  /** Its namespace's version format (how its fixed-in versions are compared). */
  readonly versionFormat: VersionFormatName;
  /** EPSS and KEV as they are now (absent where a write reads the live version). */
  readonly risk?: RiskContext;
}

const SELECT_NAMESPACES = 'SELECT id, name, version_format FROM namespace ORDER BY name';
const SELECT_NAMESPACE = 'SELECT id, name, version_format FROM namespace WHERE name = $1';
const INSERT_NAMESPACE = 'INSERT INTO namespace (name, version_format) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING';

const VULNERABILITY_COLUMNS = `
  v.id, v.name, n.name AS namespace, v.description, v.link, v.severity, v.metadata, v.updater, n.version_format AS "versionFormat",
  ${RISK_COLUMNS}`;
const SELECT_LIVE = `
  SELECT ${VULNERABILITY_COLUMNS} FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.namespace_id = $1 AND v.name = $2 AND v.deleted_at IS NULL`;
/** Any version, live or superseded (notifications show both sides). */
const SELECT_BY_ID = `
  SELECT ${VULNERABILITY_COLUMNS} FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id WHERE v.id = $1`;
/** One page of a namespace's live vulnerabilities in id order; the caller asks for limit + 1 rows. */
const SELECT_LIVE_PAGE = `
  SELECT ${VULNERABILITY_COLUMNS} FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.namespace_id = $1 AND v.deleted_at IS NULL AND v.id >= $2
  ORDER BY v.id LIMIT $3`;
/** Every live version of a name, one per namespace, with the CVE ids an advisory lists. */
const SELECT_LIVE_NAMED = `
  SELECT ${VULNERABILITY_COLUMNS}, v.cves FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.name = $1 AND v.deleted_at IS NULL
  ORDER BY n.name`;
/**
 * A fixed-in entry's fields (fi: vulnerability_fixedin, f: its feature) as arguments of
 * json_build_object (FixedInRow), which storedFixedIn reads back.
 */
export const FIXED_IN_FIELDS = `'feature', f.name, 'version', fi.fixed_version, 'state', fi.fix_state,
  'arches', fi.arches, 'affectedAbove', fi.affected_above, 'affectedFrom', fi.affected_from,
  'affectedThrough', fi.affected_through, 'source', fi.source, 'module', fi.module`;
const SELECT_FIXEDIN = `
  SELECT fi.vulnerability_id, json_build_object(${FIXED_IN_FIELDS}) AS entry
  FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id
  WHERE fi.vulnerability_id = ANY($1::bigint[]) ORDER BY f.name, fi.id`;

/**
 * A write of one vulnerability takes four statements between BEGIN and COMMIT (LOCK_NAME,
 * SELECT_FOR_WRITE, then RETIRE and INSERT_VERSION in updates.ts): each round trip cost as much as the work it did,
 * and the write was fifteen of them. Locks and the reads they guard stay in separate statements:
 * a statement reads with the snapshot taken when it started, before any lock it waits for. They
 * run as named (prepared) statements: planning SELECT_FOR_WRITE alone took about 1 ms.
 *
 * LOCK_NAME takes the namespace's shared lock (an updater rewriting it holds it exclusively), then
 * serialises writers of one (namespace, name) for the rest of the transaction. No row when the
 * namespace does not exist.
 */
const LOCK_NAME = `
  SELECT n.id, n.name, n.version_format,
    pg_advisory_xact_lock_shared(${NAMESPACE_LOCK_CLASS}, n.id)::text AS namespace_lock,
    pg_advisory_xact_lock(hashtextextended('vulnerability/' || n.id || '/' || $2, 0))::text AS name_lock
  FROM namespace n WHERE n.name = $1`;
/**
 * The live version with its fixed-in list, and the ids of the features a write may name (those
 * given, $3, and the live version's), locked in bucket order when all of them exist (locked);
 * otherwise nothing is locked and lockFeatures creates and locks them.
 */
const SELECT_FOR_WRITE = `
  WITH live AS (
    SELECT id, name, description, link, severity, metadata, updater, cves FROM vulnerability
    WHERE namespace_id = $1 AND name = $2 AND deleted_at IS NULL),
  fixes AS (
    SELECT f.id, f.name, fi.id AS fixedin_id, json_build_object(${FIXED_IN_FIELDS}) AS entry
    FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id
    WHERE fi.vulnerability_id = (SELECT id FROM live)),
  named AS (SELECT id, name FROM feature WHERE namespace_id = $1 AND name = ANY($3::text[])),
  wanted AS (SELECT id, name FROM named UNION SELECT id, name FROM fixes),
  complete AS (SELECT (SELECT count(*) FROM named) = cardinality($3::text[]) AS ok),
  locks AS (
    SELECT count(pg_advisory_xact_lock(${FEATURE_LOCK_CLASS}, bucket)) AS taken
    FROM (SELECT DISTINCT id % ${FEATURE_LOCK_BUCKETS} AS bucket FROM wanted ORDER BY 1) buckets
    WHERE (SELECT ok FROM complete))
  SELECT (SELECT row_to_json(live) FROM live) AS live,
    (SELECT json_agg(entry ORDER BY name, fixedin_id) FROM fixes) AS fixed_in,
    (SELECT json_agg(json_build_array(name, id)) FROM wanted) AS features,
    (SELECT ok FROM complete) AND (SELECT taken FROM locks) >= 0 AS locked`;
interface NamespaceRecord {
  id: number;
  name: string;
  version_format: VersionFormatName;
}

const toNamespace = (r: NamespaceRecord): NamespaceRow => ({ id: r.id, name: r.name, versionFormat: r.version_format });

export async function listNamespaces(db: Queryable): Promise<NamespaceRow[]> {
  return (await db.query<NamespaceRecord>(SELECT_NAMESPACES)).rows.map(toNamespace);
}

export async function findNamespace(db: Queryable, name: string): Promise<NamespaceRow | undefined> {
  const row = (await db.query<NamespaceRecord>(SELECT_NAMESPACE, [name])).rows[0];
  return row && toNamespace(row);
}

/** The namespace, created with versionFormat when new (an existing one keeps its format). */
export async function ensureNamespace(db: Queryable, name: string, format: VersionFormatName): Promise<NamespaceRow> {
  await db.query(INSERT_NAMESPACE, [name, format]);
  const found = await findNamespace(db, name);
  if (!found) throw new Error(`namespace ${name} vanished right after it was created`);
  return found;
}

/** A vulnerability's own fields as the queries joining its namespace read them. */
export interface VulnerabilityFields {
  name: string;
  namespace: string;
  description: string;
  link: string;
  severity: Severity;
  metadata: Record<string, unknown> | null;
}

interface VulnerabilityRecord extends RiskColumns, VulnerabilityFields {
  id: number;
  updater: string | null;
  versionFormat: VersionFormatName;
}

/** A fixed-in entry as FIXED_IN_FIELDS gives it. */
export interface FixedInRow {
  feature: string;
  version: string | null;
  state: StatedFixState | null;
  arches: string[] | null;
  affectedAbove: string | null;
  /** Absent in bundles written before the column existed. */
  affectedFrom?: string | null;
  affectedThrough: string | null;
  source: boolean | null;
  module: string | null;
}

/** A stored fixed-in entry, with only the fields it has. */
export function storedFixedIn(r: FixedInRow): FixedIn {
  return {
    feature: r.feature,
    version: r.version,
    ...(r.state ? { state: r.state } : {}),
    ...(r.arches ? { arches: r.arches } : {}),
    ...(r.affectedAbove !== null ? { affectedAbove: r.affectedAbove } : {}),
    ...(r.affectedFrom !== null && r.affectedFrom !== undefined ? { affectedFrom: r.affectedFrom } : {}),
    ...(r.affectedThrough !== null ? { affectedThrough: r.affectedThrough } : {}),
    ...(r.source ? { source: true as const } : {}),
    ...(r.module !== null && r.module !== undefined ? { module: r.module } : {}),
  };
}

/** Loads rows with their fixed-in lists (one query for all of them). */
async function withFixedIn(db: Queryable, records: VulnerabilityRecord[]): Promise<StoredVulnerability[]> {
  if (records.length === 0) return [];
  const fixes = new Map<number, FixedIn[]>();
  const { rows } = await db.query<{ vulnerability_id: number; entry: FixedInRow }>(SELECT_FIXEDIN, [records.map((r) => r.id)]);
  for (const row of rows) {
    const list = fixes.get(row.vulnerability_id) ?? [];
    list.push(storedFixedIn(row.entry));
    fixes.set(row.vulnerability_id, list);
  }
  return records.map(({ epss, kev, ...r }) => ({ ...r, risk: riskContextOf({ epss, kev }), fixedIn: fixes.get(r.id) ?? [] }));
}

export async function findLiveVulnerability(
  db: Queryable,
  namespace: NamespaceRow,
  name: string,
): Promise<StoredVulnerability | undefined> {
  const { rows } = await db.query<VulnerabilityRecord>(SELECT_LIVE, [namespace.id, name]);
  return (await withFixedIn(db, rows))[0];
}

export async function findVulnerabilityById(db: Queryable, id: number): Promise<StoredVulnerability | undefined> {
  const { rows } = await db.query<VulnerabilityRecord>(SELECT_BY_ID, [id]);
  return (await withFixedIn(db, rows))[0];
}

/**
 * The live vulnerabilities of this name in every namespace (namespace order), each with its
 * fixed-in list, risk context and the CVE ids it lists (absent when none).
 */
export async function liveVulnerabilitiesNamed(db: Queryable, name: string): Promise<StoredVulnerability[]> {
  const { rows } = await db.query<VulnerabilityRecord & { cves: string[] }>(SELECT_LIVE_NAMED, [name]);
  const stored = await withFixedIn(db, rows);
  return stored.map(({ cves: _cves, ...v }, i) => {
    const cves = rows[i]!.cves;
    return cves.length > 0 ? { ...v, cves } : v;
  });
}

/** Live vulnerabilities with id ≥ startId, at most limit of them, without fixed-in lists. */
export async function listLiveVulnerabilities(
  db: Queryable,
  namespace: NamespaceRow,
  startId: number,
  limit: number,
): Promise<StoredVulnerability[]> {
  const { rows } = await db.query<VulnerabilityRecord>(SELECT_LIVE_PAGE, [namespace.id, startId, limit]);
  return rows.map(({ epss, kev, ...r }) => ({ ...r, risk: riskContextOf({ epss, kev }), fixedIn: [] }));
}

/**
 * Takes the namespace's shared lock and the per-name write lock for the rest of the transaction;
 * undefined (nothing locked) when the namespace does not exist. Every change to a vulnerability
 * goes: lockVulnerability → liveForWrite → decide → replaceVulnerability (updates.ts).
 */
export async function lockVulnerability(client: pg.PoolClient, namespaceName: string, name: string): Promise<NamespaceRow | undefined> {
  const row = (await client.query<NamespaceRecord>({ name: 'tarsier-lock-name', text: LOCK_NAME, values: [namespaceName, name] })).rows[0];
  return row && toNamespace(row);
}

/** What a locked write starts from. */
export interface WriteState {
  /** The live version, if any. */
  readonly current: StoredVulnerability | undefined;
  /** Ids of the features given and of the live version's, all locked until the transaction ends. */
  readonly featureIds: ReadonlyMap<string, number>;
}

/**
 * The live version of a name locked by lockVulnerability, and the features a write may name
 * (`features`, plus the live version's), created when new and locked: a layer indexed
 * concurrently cannot then add a version of them that the write does not see (and would never
 * link).
 */
export async function liveForWrite(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  name: string,
  features: readonly string[],
): Promise<WriteState> {
  const given = [...new Set(features)];
  const row = (
    await client.query<{
      live:
        | (Omit<VulnerabilityRecord, 'namespace' | 'versionFormat' | keyof RiskColumns> & { metadata: Record<string, unknown> | null })
        | null;
      fixed_in: FixedInRow[] | null;
      features: Array<[string, number]> | null;
      locked: boolean;
    }>({ name: 'tarsier-select-for-write', text: SELECT_FOR_WRITE, values: [namespace.id, name, given] })
  ).rows[0]!;
  const current: StoredVulnerability | undefined = row.live
    ? { ...row.live, namespace: namespace.name, versionFormat: namespace.versionFormat, fixedIn: (row.fixed_in ?? []).map(storedFixedIn) }
    : undefined;
  if (row.locked) return { current, featureIds: new Map(row.features ?? []) };
  // A feature named for the first time: create it, and lock all of them in one ordered call.
  const names = [...new Set([...given, ...(current?.fixedIn ?? []).map((f) => f.feature)])];
  return { current, featureIds: await lockFeatures(client, namespace.id, names) };
}

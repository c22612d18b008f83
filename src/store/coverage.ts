import type { Queryable } from './pool.js';

/**
 * Who wrote each namespace's live vulnerability records, and when that writer's data was last
 * current (migration 0011): the reading behind every "is there data for this image" answer.
 */

/** The writer of records written through the v1 API (their updater column is NULL). */
export const API_WRITER = 'api';

export interface NamespaceWriter {
  namespace: string;
  /** An updater source's name, or API_WRITER. */
  writer: string;
  /**
   * When its data was last current: the source's data time (updater_state.data_updated_at), or
   * for the API the newest of its live records.
   */
  updatedAt: Date | null;
  /** Live records it wrote there (listings only). */
  records?: number;
}

/**
 * The writers of the given namespaces' live records: a skip scan of the writer index (one probe per
 * distinct writer, whatever the number of records), each with its data time.
 */
const SELECT_WRITERS = `
  WITH RECURSIVE writers (namespace_id, writer) AS (
    SELECT n.id, (SELECT coalesce(v.updater, '') FROM vulnerability v
                  WHERE v.namespace_id = n.id AND v.deleted_at IS NULL
                  ORDER BY coalesce(v.updater, '') LIMIT 1)
    FROM namespace n WHERE n.name = ANY($1::text[])
    UNION ALL
    SELECT w.namespace_id, (SELECT coalesce(v.updater, '') FROM vulnerability v
                            WHERE v.namespace_id = w.namespace_id AND v.deleted_at IS NULL AND coalesce(v.updater, '') > w.writer
                            ORDER BY coalesce(v.updater, '') LIMIT 1)
    FROM writers w WHERE w.writer IS NOT NULL
  )
  SELECT n.name AS namespace, w.writer,
         CASE WHEN w.writer = '' THEN (
           SELECT max(v.created_at) FROM vulnerability v
           WHERE v.namespace_id = w.namespace_id AND v.deleted_at IS NULL AND coalesce(v.updater, '') = '')
         ELSE s.data_updated_at END AS updated_at
  FROM writers w
  JOIN namespace n ON n.id = w.namespace_id
  LEFT JOIN updater_state s ON s.name = w.writer
  WHERE w.writer IS NOT NULL
  ORDER BY n.name, w.writer`;

/** Every namespace with its writers and their record counts (an index-only count of the live records). */
const SELECT_ALL_WRITERS = `
  SELECT n.name AS namespace, c.writer, c.records,
         CASE WHEN c.writer = '' THEN c.last_write ELSE s.data_updated_at END AS updated_at
  FROM namespace n
  LEFT JOIN (
    SELECT namespace_id, coalesce(updater, '') AS writer, count(*)::int AS records, max(created_at) AS last_write
    FROM vulnerability WHERE deleted_at IS NULL
    GROUP BY namespace_id, coalesce(updater, '')
  ) c ON c.namespace_id = n.id
  LEFT JOIN updater_state s ON s.name = c.writer
  ORDER BY n.name, c.writer`;

interface WriterRow {
  namespace: string;
  writer: string | null;
  updated_at: Date | null;
  records?: number | null;
}

const toWriter = (r: WriterRow & { writer: string }): NamespaceWriter => ({
  namespace: r.namespace,
  writer: r.writer === '' ? API_WRITER : r.writer,
  updatedAt: r.updated_at,
  ...(r.records !== undefined && r.records !== null ? { records: r.records } : {}),
});

/** The writers of these namespaces' live records; a namespace without any has none listed. */
export async function namespaceWriters(db: Queryable, namespaces: readonly string[]): Promise<NamespaceWriter[]> {
  if (namespaces.length === 0) return [];
  const { rows } = await db.query<WriterRow & { writer: string }>(SELECT_WRITERS, [namespaces]);
  return rows.map(toWriter);
}

/** Every namespace the store knows, with the writers of its live records and their counts. */
export async function allNamespaceWriters(db: Queryable): Promise<{ namespaces: string[]; writers: NamespaceWriter[] }> {
  const { rows } = await db.query<WriterRow>(SELECT_ALL_WRITERS);
  const namespaces = [...new Set(rows.map((r) => r.namespace))];
  const writers = rows.filter((r): r is WriterRow & { writer: string } => r.writer !== null).map(toWriter);
  return { namespaces, writers };
}

const ANY_RECORD = `
  SELECT EXISTS (SELECT 1 FROM vulnerability WHERE deleted_at IS NULL AND (updater IS NULL OR NOT (updater = ANY($1::text[])))) AS any`;

/** Whether any live record was written by the API or by an updater other than these. */
export async function anyRecordWrittenBesides(db: Queryable, writers: readonly string[]): Promise<boolean> {
  return (await db.query<{ any: boolean }>(ANY_RECORD, [writers])).rows[0]!.any;
}

const SELECT_NAMESPACES = 'SELECT name FROM namespace ORDER BY name';

/** Every namespace's name. */
export async function knownNamespaces(db: Queryable): Promise<string[]> {
  return (await db.query<{ name: string }>(SELECT_NAMESPACES)).rows.map((r) => r.name);
}

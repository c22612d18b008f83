import type pg from 'pg';

/** Advisory lock class for features (pg_advisory_xact_lock(class, id)). */
const FEATURE_LOCK_CLASS = 1;

const INSERT_FEATURES = `
  INSERT INTO feature (namespace_id, name) SELECT $1, unnest($2::text[]) ON CONFLICT (namespace_id, name) DO NOTHING`;
const SELECT_FEATURES = 'SELECT id, name FROM feature WHERE namespace_id = $1 AND name = ANY($2::text[])';
/** Locks in ascending id order (the subquery's order), so two writers never wait on each other in a cycle. */
const LOCK_FEATURES = `
  SELECT pg_advisory_xact_lock(${FEATURE_LOCK_CLASS}, id) FROM (SELECT unnest($1::int[]) AS id ORDER BY 1) ids`;

/**
 * Creates the features that do not exist yet and locks all of them until the transaction ends.
 *
 * The "affects" relation is written from two sides: a new vulnerability version links the existing
 * versions of its features, and a new feature version links the live vulnerabilities of its
 * feature. Both sides lock the feature first, so neither can miss rows the other is writing.
 * A transaction calling this more than once must pass its features in one call (or in a consistent
 * order) to stay clear of deadlocks.
 */
export async function lockFeatures(
  client: pg.PoolClient,
  namespaceId: number,
  names: readonly string[],
): Promise<Map<string, number>> {
  const unique = [...new Set(names)];
  await client.query(INSERT_FEATURES, [namespaceId, unique]);
  const { rows } = await client.query<{ id: number; name: string }>(SELECT_FEATURES, [namespaceId, unique]);
  await client.query(LOCK_FEATURES, [rows.map((r) => r.id)]);
  return new Map(rows.map((r) => [r.name, r.id]));
}

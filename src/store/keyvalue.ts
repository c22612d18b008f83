import type { Queryable } from './pool.js';

const GET = 'SELECT value FROM keyvalue WHERE key = $1';
const INSERT_IF_ABSENT = 'INSERT INTO keyvalue (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING';

export async function getValue(db: Queryable, key: string): Promise<string | undefined> {
  const { rows } = await db.query<{ value: string }>(GET, [key]);
  return rows[0]?.value;
}

/**
 * Stores value under key unless a value is already there, and returns the stored one. Replicas
 * racing to store a generated value all end up with the same (first) value.
 */
export async function getOrSetValue(db: Queryable, key: string, value: string): Promise<string> {
  await db.query(INSERT_IF_ABSENT, [key, value]);
  const stored = await getValue(db, key);
  if (stored === undefined) throw new Error(`keyvalue ${key} vanished right after it was stored`);
  return stored;
}

const UPSERT = 'INSERT INTO keyvalue (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value';

export async function setValue(db: Queryable, key: string, value: string): Promise<void> {
  await db.query(UPSERT, [key, value]);
}

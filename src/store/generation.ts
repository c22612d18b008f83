import type { Queryable } from './pool.js';

/**
 * The data generation: a database-wide counter bumped after each committed change to
 * vulnerabilities or layers, so every replica can tell whether something it cached is stale.
 * Bumped after COMMIT, never inside the transaction: a reader that sees the new number is sure
 * to see the data too (the reverse order would let it cache old data under the new number).
 */
const BUMP = "SELECT nextval('data_generation')";
const CURRENT = 'SELECT last_value FROM data_generation';

export async function markDataChanged(db: Queryable): Promise<void> {
  await db.query(BUMP);
}

export async function dataGeneration(db: Queryable): Promise<number> {
  return (await db.query<{ last_value: number }>(CURRENT)).rows[0]!.last_value;
}

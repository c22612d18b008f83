import type { VersionFormatName } from '../model/version-format.js';
import type { Queryable } from './pool.js';

/**
 * Which revision of each version format's comparator the stored matches were computed with
 * (migrations/0012_match_revision.sql).
 */
const SELECT = 'SELECT revision FROM match_revision WHERE version_format = $1';
const UPSERT = `
  INSERT INTO match_revision (version_format, revision) VALUES ($1, $2)
  ON CONFLICT (version_format) DO UPDATE SET revision = EXCLUDED.revision`;
const SELECT_NAMESPACES_OF_FORMAT = 'SELECT id, name FROM namespace WHERE version_format = $1 ORDER BY id';

/** The revision the stored matches of this format were computed with; undefined when none is recorded. */
export async function matchRevision(db: Queryable, format: VersionFormatName): Promise<number | undefined> {
  return (await db.query<{ revision: number }>(SELECT, [format])).rows[0]?.revision;
}

export async function setMatchRevision(db: Queryable, format: VersionFormatName, revision: number): Promise<void> {
  await db.query(UPSERT, [format, revision]);
}

/** The namespaces whose versions this format orders. */
export async function namespacesOfFormat(db: Queryable, format: VersionFormatName): Promise<{ id: number; name: string }[]> {
  return (await db.query<{ id: number; name: string }>(SELECT_NAMESPACES_OF_FORMAT, [format])).rows;
}

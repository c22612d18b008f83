-- Matches (vulnerability_affects) are computed in TypeScript with the namespace's version format and
-- stored. When a format's order changes, the matches already stored were decided by the old order:
-- each format's comparator has a revision (VersionFormat.revision), and this table says which one
-- the stored matches of that format were computed with. At start-up, a format whose revision here
-- differs from the code's has the matches of its live vulnerabilities computed again, under a
-- lease, and then its row set to the code's revision (src/rematch.ts).
CREATE TABLE match_revision (
  version_format text PRIMARY KEY CHECK (version_format IN ('dpkg', 'rpm', 'apk')),
  revision       integer NOT NULL
);
-- Matches stored so far were computed with the first revision of every format.
INSERT INTO match_revision (version_format, revision) VALUES ('dpkg', 1), ('rpm', 1), ('apk', 1);

-- A live vulnerability's matches can now be removed (by a recomputation), not only those of the
-- retired versions a purge deletes: mark the summaries of the images holding those feature versions
-- stale, as migration 0009 does for added matches. Rows of a vulnerability deleted in the same
-- statement (a purge's cascade) no longer join a live vulnerability and mark nothing: retiring it
-- already did.
CREATE FUNCTION summaries_stale_by_removed_affects() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mark_summaries_stale((
    SELECT array_agg(DISTINCT r.feature_version_id)
    FROM changed_rows r JOIN vulnerability v ON v.id = r.vulnerability_id AND v.deleted_at IS NULL));
  RETURN NULL;
END $$;
CREATE TRIGGER affects_deleted_summaries AFTER DELETE ON vulnerability_affects REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION summaries_stale_by_removed_affects();

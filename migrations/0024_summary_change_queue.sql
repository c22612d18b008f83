-- Marking summaries stale leaves the writer's transaction. Until now mark_summaries_stale (0009)
-- locked and updated the summary of every image holding a changed feature version inside the
-- vulnerability write: a write on a base package touched every image's row, so its cost grew with
-- the fleet. Now the write queues what changed (one row per statement: O(size of the change)) and
-- the refreshers (src/images/summaries.ts) mark the summaries stale afterwards, in bounded batches.
--
-- Between the write's commit and the marking, an image's summary may still say fresh while it
-- misses the change: readers (src/store/summaries.ts, SUMMARY_CURRENT) treat a summary as current
-- only when it is not stale and no queued change not yet marked up to its ancestry touches it.
CREATE TABLE summary_change (
  id               bigserial PRIMARY KEY,
  -- The feature versions whose matches or vulnerabilities changed.
  feature_versions integer[] NOT NULL,
  -- Keyset cursor of the marking: the summaries of ancestries up to this id holding these feature
  -- versions are marked stale (committed with the marking, so a crash or another replica resumes
  -- after it).
  marked_through   bigint NOT NULL DEFAULT 0,
  queued_at        timestamptz NOT NULL DEFAULT now()
);

-- Same name and signature, so the triggers of 0009 and 0012 call it unchanged. NOTIFY is delivered
-- at commit and wakes the refreshers.
CREATE OR REPLACE FUNCTION mark_summaries_stale(feature_versions integer[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF mark_summaries_stale.feature_versions IS NULL OR cardinality(mark_summaries_stale.feature_versions) = 0 THEN RETURN; END IF;
  INSERT INTO summary_change (feature_versions) VALUES (mark_summaries_stale.feature_versions);
  PERFORM pg_notify('tarsier_summaries', '');
END $$;
